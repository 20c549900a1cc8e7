"""Detect: findings from a ``JobScan``.

Each detector is a small estimator (parameters in ``__init__``, optional ``fit`` on healthy scans, ``detect(scan)
-> list[Finding]``): rule hits with roles, an isolation forest over node x window vectors (``windows``), L4's
cross-job, spatial and temporal filters, and training-health signals. Detectors never call each other.
"""
