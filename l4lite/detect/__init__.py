"""Detect: findings from a ``JobScan``.

Each detector is a small estimator (``base.Detector``: parameters in ``__init__``, optional ``fit`` on healthy
scans, ``detect(scan) -> list[Finding]``): rule hits with roles (``rules``), an isolation forest over node x window
vectors (``iforest``, ``windows``), L4's cross-job, spatial and temporal filters (``filters``), training-health
signals (``health``), collective desync (``desync``) and a hang's stuck rank (``hang``, ``collectives``).
``api.detectors`` lists the ones a diagnosis runs; ``components`` is run by the localiser for error lines no rule
named. Detectors never call each other.
"""
