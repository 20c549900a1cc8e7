"""Type checks of an incident before it is rendered, so that a hand-edited or damaged incident JSON gives one
clear line naming the field instead of a traceback from deep inside a template.

Only the named fields of schema ``l4lite.incident/1`` are checked here; the free-form chart data in ``extra`` is
handled defensively by the report itself (a malformed section is left out with a note).
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any

from l4lite.diagnose.incident import Incident
from l4lite.errors import L4Error

_STR = (str,)
_OPT_STR = (str, type(None))
_OPT_INT = (Integral, type(None))
_OPT_REAL = (Real, type(None))
_OPT_DICT = (dict, type(None))

_TOP = {"status": _STR, "category": _OPT_STR, "phase": _OPT_STR, "iteration": _OPT_INT, "failure_time": _OPT_STR,
        "summary": _OPT_STR, "scope": _OPT_STR, "confidence": _OPT_REAL, "checkpoint": _OPT_DICT,
        "stats": _OPT_DICT, "job": _OPT_DICT, "matched_fault": _OPT_DICT, "extra": _OPT_DICT,
        "recommendations": (list,), "suspects": (list,), "evidence": (list,), "phases": (list,)}
_SUSPECT = {"node": _STR, "score": _OPT_REAL, "reasons": (list, type(None)), "category": _OPT_STR}
_EVIDENCE = {"file": _STR, "line": (Integral,), "node": _OPT_STR, "rank": _OPT_INT, "time": _OPT_STR,
             "text": _OPT_STR, "template_id": _OPT_STR, "rule": _OPT_STR, "role": _STR, "score": _OPT_REAL,
             "end_line": _OPT_INT, "source": _OPT_STR, "gpu": _OPT_INT, "category": _OPT_STR, "explain": _OPT_STR,
             "count": (Integral,), "context": (list, type(None))}
_PHASE = {"name": _STR, "start": _OPT_STR, "end": _OPT_STR}


def check_incident(incident: Incident, where: str = "incident") -> None:
    """Raise L4Error naming the first field of the wrong type (``where`` names the file)."""
    _fields(incident, _TOP, where)
    for name, spec, items in (("suspects", _SUSPECT, incident.suspects), ("evidence", _EVIDENCE, incident.evidence),
                              ("phases", _PHASE, incident.phases)):
        for i, item in enumerate(items):
            _fields(item, spec, f"{where}: {name}[{i}]", prefix="")
    for i, rec in enumerate(incident.recommendations):
        if not isinstance(rec, str):
            raise L4Error(f"{where}: recommendations[{i}] should be text, not {_kind(rec)}")
    for i, sus in enumerate(incident.suspects):
        for j, reason in enumerate(sus.reasons or []):
            if not isinstance(reason, str):
                raise L4Error(f"{where}: suspects[{i}].reasons[{j}] should be text, not {_kind(reason)}")


def _fields(obj: Any, spec: dict[str, tuple[type, ...]], where: str, prefix: str = "") -> None:
    for name, types in spec.items():
        value = getattr(obj, name, None)
        ok = isinstance(value, types) and not (isinstance(value, bool) and bool not in types)
        if not ok:
            sep = "." if prefix or where.endswith("]") else ": "
            raise L4Error(f"{where}{sep}{prefix}{name} should be {_expect(types)}, not {_kind(value)}")


def _expect(types: tuple[type, ...]) -> str:
    names = {str: "text", Integral: "an integer", Real: "a number", dict: "an object", list: "a list"}
    parts = [names.get(t, t.__name__) for t in types if t is not type(None)]
    return " or ".join(parts) + (" or null" if type(None) in types else "")


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    return {str: "text", int: "an integer", float: "a number", list: "a list", dict: "an object"}.get(
        type(value), type(value).__name__)
