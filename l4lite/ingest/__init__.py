"""Ingest: a job's paths to records.

Takes file and folder paths (plain, gzip, merged, stdin); gives ``Record``s (file, line span, node, rank, GPU,
source, time, level, text) and an ``Accounting`` of every line read or skipped with its reason. ``files`` finds
and sniffs the files, ``decode`` turns bytes into numbered lines, ``context`` works out the job-level facts once,
``reader`` (with ``header``, ``lineclass``, ``attribution`` and ``timestamps``) reads each line's prefixes and
joins multi-line records, ``runs`` and ``shape`` give the fast path for lines of known shape, ``pieces`` cuts a
large file at record starts for the parallel scan.
"""
