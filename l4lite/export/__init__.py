"""Export: ``l4lite parse`` output. Records go to an Arrow spool with template ids, then out as Parquet,
CSV or JSON lines (``writers``), in one process or as shards joined without re-encoding (``parse_engine``,
``parquet_join``).
"""
