"""Live: ``l4lite tail``. Follows growing files (``follow``, ``followio``), reads their new lines into records
(``reader``, ``recordfeed``, ``lane``), keeps a sliding scan, runs the diagnosis every few seconds and raises,
updates and closes alerts (``verdict``, ``alerts``, ``triage``). The job context is built again as the job grows
and the scan read again when it changes (``jobfacts``, ``refresh``); ``tailstate`` keeps what a restart needs.
"""
