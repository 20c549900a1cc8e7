"""What a finding is, read from its own fields: job-wide or not, inferred from other lines or read from its own,
a stuck rank shown only by cascades; and the small readings of lines the localiser and its helpers share (what a
line says numbers aside, which lines a rule placed, whether a line reads as an error). Kept apart from
``localize`` so that the modules that decide a verdict's scope read one definition of each."""

from __future__ import annotations

import re
from collections.abc import Sequence

from l4lite.detect.base import Finding
from l4lite.detect.components import ERRORISH_GATE, ComponentDetector
from l4lite.detect.windows import BAD_WORDS
from l4lite.diagnose.ownlines import only_cascades
from l4lite.ingest.relay import controller_copy, quoted_ranks, relayed_copy
from l4lite.records import Record
from l4lite.rules.components import LEARNED_WORDS, component, is_cascade
from l4lite.scan.scanner import JobScan
from l4lite.vocab import GLOBAL_CATEGORIES

SEVERE = ("critical", "error")
CALM = ("warning", "info", "debug")  # what a logger rates below an error
# Health signals that infer a fault without a signature: they lead only when no signature does.
INFERRED = frozenset({"hang", "slowdown", "straggler", "val_rising"})


def is_global(f: Finding) -> bool:
    """A fault of the whole job; a guess of the learned model alone never makes one (the node stays a suspect)."""
    return (f.category in GLOBAL_CATEGORIES and f.data.get("component") != LEARNED_WORDS) or \
        f.data.get("scope") == "global"


def said_key(f: Finding) -> tuple[str, str] | None:
    """What a finding's first line says, numbers aside: its template and its last line (a traceback's
    exception), so that two tracebacks that raised different things do not read alike."""
    if not f.records:
        return None
    r = f.records[0]
    lines = (r.message or r.text).strip().splitlines()
    return r.template_id, re.sub(r"\d+", "0", lines[-1] if lines else "")


def placed_lines(findings: Sequence[Finding]) -> set[tuple[str, int]]:
    """(file, line) of the records a rule matched: those lines have a role already."""
    return {(r.file, r.line) for f in findings if f.detector == "rules" for r in f.records}


def reads_as_error(r: Record, named: bool = True) -> bool:
    """A line that reads as an error (its level or its words) and (``named``) names a component by the lexicon's
    words: not a notice that merely names one, nor a launcher's "error" that names none."""
    if not named:  # any word of trouble will do, but not a launcher's report of the ranks it stopped, nor a
        # line its own logger rated a warning or less (a start-up notice that cannot detect an accelerator)
        return r.source != "launcher" and (r.level in SEVERE or (
            r.level not in CALM and BAD_WORDS.search(r.text[:2000]) is not None))
    return (r.level in SEVERE or ERRORISH_GATE.search(r.text[:2000]) is not None) and component(r.text) is not None


def torn_down(f: Finding) -> bool:
    """A stuck rank shown only by cascades; its agent's SIGTERM of it while it was busy is more: the hang itself."""
    return only_cascades(f) and not f.data.get("killed_busy")


def inferred(f: Finding) -> bool:
    """A finding inferred from other lines (a hang, a slowdown), not read from a line that says what broke."""
    return f.data.get("signal") in INFERRED or bool(f.data.get("inferred"))


def node_for_host(scan: JobScan, host: str) -> str | None:
    """The job's node for a host name as a launcher prints it (FQDN, upper case, IP)."""
    nodes = scan.node_last
    if host in nodes:
        return host
    short = host.strip().lower()
    short = short if re.match(r"^\d+\.\d+\.\d+\.\d+$", short) else short.split(".", 1)[0]
    for node in nodes:
        if node.lower() == short or node.lower().split(".", 1)[0] == short:
            return node
    return None


def alone_errors(findings: list[Finding], roles: dict[int, str]) -> list[Finding]:
    """The logs of one node leave nothing to compare with: no peer's cascade shows that it failed, and no second
    node shows what is usual. Error lines there that name a component are the fault (they become root)."""
    out = [f for f in findings if f.detector == ComponentDetector.name and f.severity == "error"]
    for f in out:
        roles[id(f)] = "root"
        f.data["alone"] = True
    return out


def controller_report(f: Finding) -> bool:
    """A finding that stands on Ray Train's controller re-raising its workers' errors, with nothing of a rank's
    own beside it but lost peers and the driver's relayed copies: it says that ranks failed, not on which node
    (the controller runs where the driver does), so a rank's own line or a stuck rank inferred from its peers
    places the fault before it."""
    texts = [r.text for r in f.records]
    return any(controller_copy(t) for t in texts) and \
        all(controller_copy(t) or relayed_copy(t) or is_cascade(t) for t in texts)


def quoted_elsewhere(scan: JobScan, f: Finding) -> bool:
    """A finding that stands only on errors of another node's ranks, quoted to its own ranks by a collective that
    gathers every rank's failure (a sharded checkpoint's save or load): the quoted rank's node met the fault, this
    one was told of it. Ranks the job's lines do not place on a node leave the finding its own."""
    if f.node is None or not f.records:
        return False
    for r in f.records:
        nodes = {scan.rank_nodes.get(q) for q in quoted_ranks(r.text)}
        if not nodes or None in nodes or f.node in nodes:
            return False
    return True


def confirmed_node(scan: JobScan, f: Finding) -> str | None:
    """The node a confirmation names (torchelastic's host, or the failed rank's node), if it is in the job."""
    host = f.data.get("host")
    if host:
        node = node_for_host(scan, str(host))
        if node is not None:
            return node
    rank = f.data.get("failed_rank")
    if rank is not None:
        try:
            return scan.rank_nodes.get(int(rank))
        except (TypeError, ValueError):
            return None
    return None
