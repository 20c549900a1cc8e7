"""Scale: the scan on shards, in one process, a process pool or a Dask cluster.

``shards`` plans and scans shards (contiguous files, large files cut at record starts) and merges their results
in file order; ``engine`` runs them; ``parallel`` resolves ``--jobs``. The merged scan equals the one-pass scan.
"""
