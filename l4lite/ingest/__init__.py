"""Ingest: a job's paths to records.

Takes file and folder paths (plain, gzip, archives, merged, stdin); gives the job's ``JobContext``, ``Record``s
(file, line span, node, rank, GPU, source, time, level, text), runs of known-shape lines (``shaperun.ShapeRun``)
and an ``Accounting`` of every line read or skipped with its reason. ``files`` finds and sniffs the files,
``decode`` turns bytes into numbered lines. ``context`` decides the job-level facts once, from what each file's
two ends say (``filesample``): each file's node (``layout``, ``writers``, ``pids``), rank ties (``fileranks``),
the year and day order (``spans``, ``dateorder``), the span (``spans``) and each node's clock (``jobclock`` with
``zones``, ``steps``, ``statedsteps``; ``skew``). ``reader`` (with ``header``, ``lineclass``, ``attribution``,
``streamnames`` and ``timestamps``) reads each line's prefixes and joins multi-line records; ``runs`` and
``shape`` give the fast path for lines of known shape; ``pieces`` cuts a large file at record starts for the
parallel scan.
"""
