"""Scan: one streaming pass over a job's records into bounded aggregates (a ``JobScan``).

Takes records (and runs of known-shape lines); gives template statistics, node x time-bucket counts, rule hits,
training metric points, phase markers, device events and exemplar records. Scans of shards merge. ``job`` drives
the pass over files in one process with the job's context; ``scanner`` and ``runpath`` add records and runs;
``metrics`` and ``metric_plans`` read trainer progress lines; ``phases`` finds phase markers; ``clocks`` puts
the span and phases on one node's clock when the nodes' clocks disagree.
"""
