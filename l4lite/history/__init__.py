"""History: a SQLite store of analysed jobs, confirmed faults and healthy baselines.

Read by ``api.diagnose`` (cross-job template rates, the fault library) and written by ``api.analyze``; ``transfer``
exports and imports it as JSON, ``views`` answers fleet questions, ``schema`` migrates it.
"""
