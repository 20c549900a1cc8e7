"""l4lite: diagnose failed or hung large-scale training jobs from their logs.

The package reads top to bottom as the pipeline:
``sources`` (find and open files) -> ``ingest`` (lines to records: node, rank, time, multi-line)
-> ``mining`` (drain3 template mining) -> ``windows`` (node x time counts) -> ``detect`` (findings)
-> ``localize`` (suspects, phase, category) -> ``incident`` (the JSON result) -> ``report`` (HTML).
``pipeline`` composes the stages; ``cli`` is a thin layer over it.
"""

__version__ = "0.1.0"
