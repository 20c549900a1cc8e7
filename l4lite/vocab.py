"""The fixed vocabulary of the incident schema.

These names appear in the JSON incident, the rule files and the report, so they are defined once here.
"""

from __future__ import annotations

from typing import Literal

Category = Literal[
    "gpu_hardware", "network", "storage", "host", "oom", "numerical", "data", "software", "user_config", "unknown"
]
Phase = Literal["init", "load", "train", "checkpoint", "eval", "shutdown"]
Role = Literal["root", "cascade", "symptom", "confirmation", "anomaly"]
Source = Literal["trainer", "nccl", "kernel", "storage", "launcher", "other"]
Severity = Literal["critical", "error", "warning", "info"]
Level = Literal["error", "warning", "info", "debug"]

CATEGORIES: tuple[str, ...] = (
    "gpu_hardware", "network", "storage", "host", "oom", "numerical", "data", "software", "user_config", "unknown",
)
PHASES: tuple[str, ...] = ("init", "load", "train", "checkpoint", "eval", "shutdown")
ROLES: tuple[str, ...] = ("root", "cascade", "symptom", "confirmation", "anomaly")
SOURCES: tuple[str, ...] = ("trainer", "nccl", "kernel", "storage", "launcher", "other")
SEVERITIES: tuple[str, ...] = ("critical", "error", "warning", "info")
LEVELS: tuple[str, ...] = ("error", "warning", "info", "debug")

# Categories whose fault is a property of the whole job rather than of one node: no node is blamed.
GLOBAL_CATEGORIES: frozenset[str] = frozenset({"numerical", "user_config"})

INCIDENT_SCHEMA = "l4lite.incident/1"
