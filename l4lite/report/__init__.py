"""Report: an ``Incident`` as a self-contained HTML page (``html``, ``view``, ``charts``, ``facts``) or as
Markdown for a ticket (``markdown``), with context lines read back from the logs (``context``) and a schema check
of saved incidents (``check``).

Knows the incident only, never the detectors; every log line is escaped.
"""
