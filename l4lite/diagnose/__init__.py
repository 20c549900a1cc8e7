"""Diagnose: findings to a verdict.

Takes a ``JobScan`` and findings; gives suspects (nodes ranked), the phase, iteration, category, scope, the
evidence lines with roles, the confidence, and the ``Incident`` dataclass that every later stage reads
(``incident``). ``localize`` combines the findings into a verdict, calling one module per reading of a job
(``alike``, ``allwaited``, ``stopped``, ``lone``, ``spatial``, ...); ``phasing`` gives the phase, ``evidence``
the lines, ``confidence`` how likely the verdict is right, and ``assemble`` the ``Incident``.
"""
