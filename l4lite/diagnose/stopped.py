"""A launcher stopped from outside: the node taken away when its stop came first, the job's teardown after.

torchelastic's agent says "Received 15 death signal, shutting down workers" when the scheduler (a preemption,
an eviction, a cancel, a time limit) signals it. Before any other failure of the job that is the fault: the
node was taken away while its peers trained on, and their lost connections follow it. After another failure it
is the scheduler (or an operator) tearing down a job that had already failed, a consequence like any other.
When the scheduler's own line says why it ended the job step (Slurm's `CANCELLED AT ... DUE TO TIME LIMIT`), the
stop is that reason: the job's limit, not a node taken away. When every stop came after the job had failed (a node
that stopped making progress, found by the hang detector, then the limit), that reason ended a job that had
already stopped: a consequence too.
"""

from __future__ import annotations

from collections.abc import Sequence

from l4lite.detect.base import Finding
from l4lite.diagnose.evidence import own_time
from l4lite.diagnose.traits import SEVERE

STOPPED_RULE = "launcher-stopped"
# how much earlier another failure must be for the stop to be its teardown (stamps of two nodes' clocks)
GRACE = 2.0
# rules of the scheduler's own line saying why it ended the job (its category is the stop's cause); a node failure
# is a root of its own already
REASON_RULES = ("slurm-time-limit",)


def stopped_late(findings: Sequence[Finding], roles: dict[int, str]) -> list[Finding]:
    """Root findings of a launcher stopped from outside that came after another failure of the job become
    cascades (``data["teardown"]``). Returns them."""
    stops = [f for f in findings if f.rule == STOPPED_RULE and roles.get(id(f)) == "root"]
    if not stops:
        return []
    # times the lines carry themselves: an unstamped traceback inherits its file's last stamp, which may be a
    # start-up banner's minutes before anything failed; a launcher's report of a failed worker is a symptom
    failed = [t for f in findings if f.rule != STOPPED_RULE and f.severity in SEVERE and not f.data.get("survived")
              and roles.get(id(f)) in ("root", "cascade", "confirmation", "symptom") for r in f.records
              if (t := own_time(r)) is not None]
    first = min(failed, default=None)

    def stopped_at(f: Finding) -> float | None:
        return min((t for r in f.records if (t := own_time(r)) is not None), default=f.time)

    late = [f for f in stops if first is not None and (t := stopped_at(f)) is not None and first < t - GRACE]
    for f in late:  # a teardown names no cause: not the node's, not the host's
        roles[id(f)] = "cascade"
        f.category = "unknown"
        f.data["teardown"] = True
    first_stops = [f for f in stops if f not in late]
    if late and not first_stops:
        ended_late(findings, roles)
    stopped_for(first_stops, findings, roles)
    stopped_first(first_stops, findings, roles)
    return late


def ended_late(findings: Sequence[Finding], roles: dict[int, str]) -> list[Finding]:
    """The scheduler's reason lines of a job whose every stop came after it failed become cascades
    (``data["teardown"]``): the limit ended what had stopped, it says nothing of why. Their own time is no guide
    (an unstamped line of a merged output inherits the last stamp above it, which may be the failure's). Returns
    them."""
    reasons = [f for f in findings if f.rule in REASON_RULES and not f.data.get("survived")]
    for f in reasons:
        roles[id(f)] = "cascade"
        f.data["teardown"] = True
    return reasons


def stopped_for(stops: Sequence[Finding], findings: Sequence[Finding], roles: dict[int, str]) -> list[Finding]:
    """Stops the scheduler's own line explains (written within ``GRACE`` of them: it signals the job's processes
    as it writes it) take that line's category, and the line becomes a root beside them: the job ended at its
    limit, whichever nodes the signal reached. Returns the reason findings that explain a stop."""
    reasons = [f for f in findings if f.rule in REASON_RULES and not f.data.get("survived")]
    used: list[Finding] = []
    for stop in stops:
        at = min((t for r in stop.records if (t := own_time(r)) is not None), default=stop.time)
        for reason in reasons:
            told = min((t for r in reason.records if (t := own_time(r)) is not None), default=reason.time)
            if at is None or told is None or abs(at - told) > GRACE:
                continue
            stop.category = reason.category
            stop.data["reason"] = reason.rule
            if reason not in used:
                roles[id(reason)] = "root"
                used.append(reason)
    return used


def stopped_first(stops: Sequence[Finding], findings: Sequence[Finding], roles: dict[int, str]) -> list[Finding]:
    """Roots and confirmations (a peer's agent naming its own rank as the first failure) that came more than
    ``GRACE`` after a launcher stopped from outside (which came first) become cascades: the node taken away is
    the fault and its peers' failures follow it, whether or not a path or a line names the stopped node (a root
    on no node must not lose to the peer that lost it). Returns them."""
    at = [t for f in stops if (t := min((t for r in f.records if (t := own_time(r)) is not None),
                                        default=f.time)) is not None]
    if not at:
        return []
    first = min(at)
    # an unstamped line's time is inherited from a line above it: never later than when it was written
    after = [f for f in findings if f.rule != STOPPED_RULE and roles.get(id(f)) in ("root", "confirmation")
             and (t := min((t for r in f.records if (t := own_time(r)) is not None), default=f.time)) is not None
             and t > first + GRACE]
    for f in after:
        roles[id(f)] = "cascade"
    return after
