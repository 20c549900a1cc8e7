"""Diagnose: findings to a verdict.

Takes a ``JobScan`` and findings; gives suspects (nodes ranked), the phase, iteration, category, the evidence
lines with roles, and the ``Incident`` dataclass that every later stage reads (``incident``).
"""
