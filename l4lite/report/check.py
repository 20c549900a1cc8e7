"""Type checks of an incident before it is rendered, so that a hand-edited or damaged incident JSON gives one
clear line naming the field instead of a traceback from deep inside a template.

Only the named fields of schema ``l4lite.incident/1`` are checked here (their types and, for the fixed vocabulary,
their values); the free-form chart data in ``extra`` is handled defensively by the report itself (a malformed
section is left out with a note). The published JSON Schema (``docs/incident.schema.json``) says the same thing
for other tools; a test holds the two in agreement field by field, so the report needs no schema library.
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any

from l4lite.diagnose.incident import Incident
from l4lite.errors import L4Error
from l4lite.vocab import CATEGORIES, PHASES, ROLES

STATUSES = ("incident", "healthy")
SCOPES = ("node", "global")

_STR = (str,)
_OPT_STR = (str, type(None))
_OPT_INT = (Integral, type(None))
_OPT_REAL = (Real, type(None))
_OPT_DICT = (dict, type(None))

_TOP = {"status": _STR, "category": _OPT_STR, "phase": _OPT_STR, "iteration": _OPT_INT, "failure_time": _OPT_STR,
        "summary": _STR, "scope": _OPT_STR, "confidence": _OPT_REAL, "checkpoint": _OPT_DICT,
        "stats": _OPT_DICT, "job": _OPT_DICT, "matched_fault": _OPT_DICT, "extra": _OPT_DICT,
        "recommendations": (list,), "suspects": (list,), "evidence": (list,), "phases": (list,),
        "attempts": (list, type(None))}
_SUSPECT = {"node": _STR, "score": _OPT_REAL, "reasons": (list, type(None)), "category": _OPT_STR}
_EVIDENCE = {"file": _STR, "line": (Integral,), "node": _OPT_STR, "rank": _OPT_INT, "time": _OPT_STR,
             "text": _OPT_STR, "template_id": _OPT_STR, "rule": _OPT_STR, "role": _STR, "score": _OPT_REAL,
             "end_line": _OPT_INT, "source": _OPT_STR, "gpu": _OPT_INT, "category": _OPT_STR, "explain": _OPT_STR,
             "count": (Integral,), "context": (list, type(None))}
_PHASE = {"name": _STR, "start": _OPT_STR, "end": _OPT_STR}
# fields whose values come from the fixed vocabulary (None allowed where the type allows it)
_TOP_CHOICES = {"status": STATUSES, "category": CATEGORIES, "phase": PHASES, "scope": SCOPES}
_SUSPECT_CHOICES = {"category": CATEGORIES}
_EVIDENCE_CHOICES = {"role": ROLES, "category": CATEGORIES}
_ATTEMPT = {"attempt": (Integral,), "verdict": (bool,), "status": _STR, "category": _OPT_STR, "phase": _OPT_STR,
            "iteration": _OPT_INT, "failure_time": _OPT_STR, "nodes": (list,), "pods": (list,), "files": (list,),
            "summary": _OPT_STR, "root": _OPT_DICT}
_ATTEMPT_CHOICES = {"status": STATUSES, "category": CATEGORIES, "phase": PHASES}
_ROOT_LINE = {"file": _STR, "line": (Integral,), "text": _STR}
_LAST_SAVED = {"iteration": _OPT_INT, "path": _OPT_STR, "time": _OPT_STR, "complete": (bool, type(None))}
_CONTEXT = {"line": _OPT_INT, "text": _OPT_STR}
_COUNT = (Integral, type(None))
_OPT_BOOL = (bool, type(None))
_CLOCK_SKEW = {"reference": _OPT_STR, "threshold_seconds": _OPT_REAL, "largest_seconds": _OPT_REAL,
               "exceeds": _OPT_BOOL, "corrected": _OPT_BOOL, "nodes": _OPT_DICT, "note": _OPT_STR}
_ACCOUNTING = {"files": _COUNT, "lines_read": _COUNT, "lines_in_records": _COUNT, "records": _COUNT,
               "lines_unwrapped": _COUNT,
               "lines_skipped": _OPT_DICT, "files_skipped": _OPT_DICT, "warnings": (list, type(None))}


_REQUIRED = {"": ("status", "category", "phase", "iteration", "failure_time", "summary"), "suspects": ("node", "score"),
             "evidence": ("file", "line", "node", "rank", "time", "text", "template_id", "rule", "role", "score"),
             "phases": ("name",)}


def check_document(data: dict[str, Any], where: str = "incident") -> None:
    """Before an incident is built from JSON: the lists are lists of objects and the required fields are there,
    so that a damaged file is refused with the field's name rather than a constructor's complaint."""
    for name in _REQUIRED[""]:
        if name not in data:
            raise L4Error(f"{where}: {name} is missing")
    for name in ("suspects", "evidence", "phases"):
        items = data.get(name, [])
        if not isinstance(items, list):
            raise L4Error(f"{where}: {name} should be a list, not {_kind(items)}")
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                raise L4Error(f"{where}: {name}[{i}] should be an object, not {_kind(item)}")
            for field_name in _REQUIRED[name]:
                if field_name not in item:
                    raise L4Error(f"{where}: {name}[{i}].{field_name} is missing")


def check_incident(incident: Incident, where: str = "incident") -> None:
    """Raise L4Error naming the first field of the wrong type (``where`` names the file)."""
    _fields(incident, _TOP, where)
    _choices(incident, _TOP_CHOICES, f"{where}: ")
    for name, spec, choices, items in (("suspects", _SUSPECT, _SUSPECT_CHOICES, incident.suspects),
                                       ("evidence", _EVIDENCE, _EVIDENCE_CHOICES, incident.evidence),
                                       ("phases", _PHASE, {}, incident.phases)):
        for i, item in enumerate(items):
            _fields(item, spec, f"{where}: {name}[{i}]", prefix="")
            _choices(item, choices, f"{where}: {name}[{i}].")
    _bounds(incident.confidence, "confidence", f"{where}: ", 0.0, 1.0)
    for i, ev in enumerate(incident.evidence):
        for name in ("line", "count"):
            _bounds(getattr(ev, name), name, f"{where}: evidence[{i}].", 0)
        for j, row in enumerate(ev.context or []):
            _object(row, _CONTEXT, f"{where}: evidence[{i}].context[{j}]")
    checkpoint = incident.checkpoint or {}
    for name in ("last_saved", "in_progress"):
        if checkpoint.get(name) is not None:
            _object(checkpoint[name], _LAST_SAVED, f"{where}: checkpoint.{name}")
    _fields(checkpoint, {"saves_seen": _COUNT}, f"{where}: checkpoint.")
    _bounds(checkpoint.get("saves_seen"), "saves_seen", f"{where}: checkpoint.", 0)
    after = checkpoint.get("saved_after", [])
    if not isinstance(after, list):
        raise L4Error(f"{where}: checkpoint.saved_after should be a list, not {_kind(after)}")
    for i, save in enumerate(after):
        _object(save, _LAST_SAVED, f"{where}: checkpoint.saved_after[{i}]")
    _stats(incident.stats or {}, f"{where}: stats")
    _fields(incident.job or {}, {"clock": _OPT_STR}, f"{where}: job.")
    skew = (incident.job or {}).get("clock_skew")
    if skew is not None:
        _object(skew, _CLOCK_SKEW, f"{where}: job.clock_skew")
        for name in ("threshold_seconds", "largest_seconds"):
            _bounds(skew.get(name), name, f"{where}: job.clock_skew.", 0)
    _attempts(incident.attempts, f"{where}: attempts")
    for i, rec in enumerate(incident.recommendations):
        if not isinstance(rec, str):
            raise L4Error(f"{where}: recommendations[{i}] should be text, not {_kind(rec)}")
    for i, sus in enumerate(incident.suspects):
        for j, reason in enumerate(sus.reasons or []):
            if not isinstance(reason, str):
                raise L4Error(f"{where}: suspects[{i}].reasons[{j}] should be text, not {_kind(reason)}")


def _fields(obj: Any, spec: dict[str, tuple[type, ...]], where: str, prefix: str = "") -> None:
    for name, types in spec.items():
        value = obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)
        ok = isinstance(value, types) and not (isinstance(value, bool) and bool not in types)
        if not ok:
            sep = "." if prefix or where.endswith("]") else "" if where.endswith(".") else ": "
            raise L4Error(f"{where}{sep}{prefix}{name} should be {_expect(types)}, not {_kind(value)}")


def _object(value: Any, spec: dict[str, tuple[type, ...]], where: str) -> None:
    if not isinstance(value, dict):
        raise L4Error(f"{where} should be an object, not {_kind(value)}")
    _fields(value, spec, where + ".", prefix="")


def _stats(stats: dict[str, Any], where: str) -> None:
    """The line accounting, at the top of ``stats`` (analyze) or grouped under ``stats.accounting``."""
    _fields(stats, {"templates": _COUNT, "seconds": _OPT_REAL}, where + ".")
    _bounds(stats.get("templates"), "templates", where + ".", 0)
    _bounds(stats.get("seconds"), "seconds", where + ".", 0)
    for acc, at in ((stats, where), (stats.get("accounting"), f"{where}.accounting")):
        if acc is None:
            continue
        _object(acc, _ACCOUNTING, at)
        for name in ("files", "lines_read", "lines_in_records", "records", "lines_unwrapped"):
            _bounds(acc.get(name), name, f"{at}.", 0)
        for name in ("lines_skipped", "files_skipped"):
            for reason, n in (acc.get(name) or {}).items():
                if not isinstance(n, Integral) or isinstance(n, bool) or n < 0:
                    raise L4Error(f"{at}.{name}[{str(reason)[:40]!r}] should be a count, not {_kind(n)}")
        rows = acc.get("warnings")
        if rows is not None and not all(isinstance(r, str) for r in rows):
            raise L4Error(f"{at}.warnings should be a list of text")


def _attempts(attempts: list[Any] | None, where: str) -> None:
    """A restarted job's attempts (``api.diagnose_attempts``); absent keys read as None, so only the ones the
    schema requires are insisted on."""
    for i, row in enumerate(attempts or []):
        at = f"{where}[{i}]"
        _object(row, {k: v for k, v in _ATTEMPT.items() if k in row or k in ("attempt", "verdict", "status")}, at)
        _choices(row, _ATTEMPT_CHOICES, at + ".")
        _bounds(row.get("attempt"), "attempt", at + ".", 0)
        for name in ("nodes", "pods", "files"):
            if not all(isinstance(x, str) for x in row.get(name) or []):
                raise L4Error(f"{at}.{name} should be a list of text")
        if row.get("root") is not None:
            _object(row["root"], {k: v for k, v in _ROOT_LINE.items() if k in row["root"]}, f"{at}.root")
            _bounds(row["root"].get("line"), "line", f"{at}.root.", 0)


def _bounds(value: Any, name: str, where: str, low: float, high: float | None = None) -> None:
    if isinstance(value, Real) and not isinstance(value, bool) and (value < low or (high is not None and value > high)):
        span = f"between {low:g} and {high:g}" if high is not None else f"at least {low:g}"
        raise L4Error(f"{where}{name} should be {span}, not {value}")


def _choices(obj: Any, spec: dict[str, tuple[str, ...]], where: str) -> None:
    for name, allowed in spec.items():
        value = obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)
        if value is not None and value not in allowed:
            raise L4Error(f"{where}{name} should be one of {', '.join(allowed)}, not {str(value)[:40]!r}")


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
