"""The one node that said something of its own beats the nodes that only echoed the failure."""

from __future__ import annotations

from scan_helpers import DigitMiner, rec

from l4lite.detect.base import Finding
from l4lite.diagnose.localize import localize
from l4lite.diagnose.ownlines import node_apart
from l4lite.scan.scanner import JobScan, scan_records

NODES = ["n1", "n2", "n3", "n4"]
STORE = "torch.distributed.DistBackendError: [{r}] is setting up NCCL communicator and retrieving ncclUniqueId " \
        "from [0] via c10d key-value store by key '0', but store->get('0') got error: Connection reset by peer"
SIGTERM = "torch.distributed.elastic.multiprocessing.api: [WARNING] Sending process 4{r}11 closing signal SIGTERM"


def _scan() -> JobScan:
    records = [rec(f"12:00:0{k} [INFO] initializing torch distributed (rank {k})", node=n, rank=k, time=1000.0 + k,
                   file=f"{n}.log") for k, n in enumerate(NODES)]
    return scan_records(records, DigitMiner())


def _echo(node: str, k: int, t: float = 1050.0) -> list[Finding]:
    """A node that lost its peer: the store error (a cascade) and its agent's teardown (new to the job)."""
    store = rec(STORE.format(r=k), node=node, rank=k, time=t, line=5, file=f"{node}.log")
    term = rec(SIGTERM.format(r=k), node=node, rank=k, time=t + 5, line=6, file=f"{node}.log")
    return [Finding("rules", "network", "cascade", 0.31, "store reset", node=node, rank=k, time=t,
                    rule="nccl-socket-closed", records=[store]),
            Finding("filters", "unknown", "anomaly", 0.9, "new template", node=node, rank=k, time=t + 5,
                    records=[term])]


def _own(node: str, text: str, t: float = 1010.0) -> Finding:
    r = rec(text, node=node, rank=NODES.index(node), time=t, line=4, file=f"{node}.log")
    return Finding("filters", "unknown", "anomaly", 0.9, "new template", node=node, time=t, records=[r])


def _roles(findings: list[Finding]) -> dict[int, str]:
    return {id(f): f.role for f in findings}


def test_the_one_node_with_lines_of_its_own_is_apart() -> None:
    findings = [f for k, n in enumerate(NODES) if n != "n3" for f in _echo(n, k)]
    findings.append(_own("n3", "[host3:405884] *** Process received signal ***"))
    apart = node_apart(findings, _roles(findings))
    assert apart is not None and apart.node == "n3" and apart.category == "unknown"
    assert [r.text for r in apart.records] == ["[host3:405884] *** Process received signal ***"]


def test_no_node_is_apart_when_two_said_something_or_too_few_echo() -> None:
    findings = [f for k, n in enumerate(NODES) if n != "n3" for f in _echo(n, k)]
    two = findings + [_own("n3", "*** Process received signal ***"), _own("n1", "Segmentation fault (core dumped)")]
    assert node_apart(two, _roles(two)) is None
    few = _echo("n1", 0) + [_own("n3", "*** Process received signal ***")]
    assert node_apart(few, _roles(few)) is None
    echoes_only = [f for k, n in enumerate(NODES) for f in _echo(n, k)]  # teardown is no line of one's own
    assert node_apart(echoes_only, _roles(echoes_only)) is None


def test_without_a_root_the_node_apart_is_blamed_not_the_first_cascade() -> None:
    # the node where it began printed a socket timeout of its own; the first severe line is a peer's store error
    findings = [f for k, n in enumerate(NODES) if n != "n3" for f in _echo(n, k, t=1050.0 + k)]
    for f in findings:
        f.severity = "error"
    own = _own("n3", "[E socket.cpp:860] [c10d] The client socket has timed out after 60s while trying to connect "
                     "to 192.0.0.1:1234")
    # a rule reads its line as a rendezvous timeout (a cascade, a warning): n3 is not the silent node either
    findings += [own, Finding("rules", "network", "cascade", 0.32, "rendezvous timeout", node="n3", time=1010.0,
                              rule="dist-rendezvous-timeout", severity="warning", records=list(own.records))]
    v = localize(_scan(), findings)
    assert v.status == "incident" and v.scope == "node" and v.suspects[0][0] == "n3"
    assert v.primary is not None and v.primary.data.get("apart")
