"""Localisation: root beats cascade, the earliest root wins, global faults blame no node, survived errors."""

from __future__ import annotations

from scan_helpers import DigitMiner, rec

from l4lite.detect.base import Finding
from l4lite.diagnose.assemble import build_incident
from l4lite.diagnose.localize import Localizer, localize
from l4lite.diagnose.traits import node_for_host
from l4lite.records import Record
from l4lite.scan.scanner import JobScan, scan_records

NODES = ["n1", "n2", "n3", "n4"]


def _scan(last_iter: int = 50, extra: list[Record] | None = None) -> JobScan:
    records = []
    line = 0
    for i in range(1, last_iter + 1):
        for node in NODES:
            line += 1
            records.append(rec(f"12:00:00 iteration {i}/1000 | lm loss: 2.0 | elapsed time per iteration (ms): 1000.0 |",
                               node=node, rank=NODES.index(node), time=1000.0 + i, line=line, file=f"{node}.log"))
    return scan_records(records + (extra or []), DigitMiner())


def finding(node: str | None, t: float, *, role: str = "root", category: str = "gpu_hardware", score: float = 0.9,
            rule: str = "r", scope: str = "node", line: int = 1, text: str = "error line", **data) -> Finding:
    r = rec(f"12:00:00 {text}", node=node, time=t, line=line, file=f"{node}-kern.log")
    return Finding("rules", category, role, score, f"{rule} happened", node=node, time=t, rule=rule,
                   records=[r], data={"scope": scope, **data})


def test_root_outranks_cascades_on_every_other_node() -> None:
    scan = _scan()
    root = finding("n3", 1051.0, rule="xid-79")
    cascades = [finding(n, 1651.0, role="cascade", category="unknown", score=0.35, rule="watchdog")
                for n in NODES if n != "n3"]
    v = localize(scan, cascades + [root])
    assert v.status == "incident" and v.primary is root and v.category == "gpu_hardware" and v.scope == "node"
    assert v.suspects[0][0] == "n3" and v.suspects[0][1] > max(s.score for s in v.suspects[1:])
    assert v.roles[0] == "root" and v.roles.count("root") == 1
    assert v.iteration == 50 and v.phase == "train"


def test_earliest_root_wins_among_close_scores_and_later_roots_become_cascades() -> None:
    scan = _scan()
    link_down = finding("n2", 1050.0, category="network", score=0.9, rule="ib-link-down")
    ib_err_here = finding("n2", 1052.0, category="network", score=0.8, rule="nccl-ib", line=2)
    ib_err_peer = finding("n4", 1051.5, category="network", score=0.8, rule="nccl-ib")
    v = localize(scan, [ib_err_peer, ib_err_here, link_down])
    assert v.primary is link_down and v.suspects[0][0] == "n2"
    roles = {f.node + f.rule: r for f, r in zip(v.findings, v.roles, strict=True)}  # type: ignore[operator]
    assert roles == {"n2ib-link-down": "root", "n2nccl-ib": "root", "n4nccl-ib": "cascade"}


def test_a_much_stronger_later_root_beats_a_weak_early_one() -> None:
    scan = _scan()
    weak = finding("n1", 1040.0, category="software", score=0.3, rule="python-traceback")
    strong = finding("n3", 1051.0, score=1.0, rule="xid-79")
    assert localize(scan, [weak, strong]).primary is strong


def test_global_fault_blames_no_node() -> None:
    scan = _scan()
    errs = [finding(n, 1051.0 + k, category="user_config", scope="global", score=0.6, rule="cfg", line=k + 1)
            for k, n in enumerate(NODES)]
    v = localize(scan, errs)
    assert v.status == "incident" and v.scope == "global" and v.suspects == []
    assert v.category == "user_config" and v.roles.count("root") == 4


def test_error_that_training_survived_is_a_symptom() -> None:
    scan = _scan(last_iter=200)
    early = finding("n2", 1010.0, category="network", rule="nccl-ib")  # 190 iterations went on after it
    v = localize(scan, [early])
    assert v.status == "healthy" and v.roles == ["symptom"] and early.data["survived"]


def test_only_cascades_still_make_an_incident_and_lagging_rank_is_blamed() -> None:
    scan = _scan()
    texts = {0: "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=120, OpType=ALLREDUCE)",
             1: "[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=120, OpType=ALLREDUCE)",
             2: "[Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=117, OpType=ALLREDUCE)",
             3: "[Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=120, OpType=ALLREDUCE)"}
    cascades = [finding(NODES[r], 1700.0 + r, role="cascade", category="unknown", score=0.35, rule="watchdog",
                        text=t) for r, t in texts.items()]
    v = localize(scan, cascades)
    assert v.status == "incident" and v.suspects[0][0] == "n3"  # rank 2 lives on n3


def test_launcher_summary_names_the_node_when_nothing_else_does() -> None:
    scan = _scan()
    summaries = [finding(n, 1700.0, role="confirmation", category="unknown", score=0.3, rule="elastic-root-cause",
                         host=f"{n}.cluster.local", groups={"when": f"1970-01-01_00:2{k}:00"})
                 for k, n in enumerate(["n4", "n2", "n3"])]
    v = localize(scan, summaries)
    assert v.status == "incident" and v.primary.node == "n4"  # type: ignore[union-attr]
    assert v.suspects[0][0] == "n4"


def test_hang_is_primary_only_without_a_signature() -> None:
    scan = _scan()
    hang = Finding("health", "software", "root", 0.5, "no progress", node=None, time=1050.0,
                   records=[rec("last", node="n1", time=1050.0)], data={"signal": "hang", "scope": "global"})
    enospc = finding("n2", 1060.0, category="storage", score=0.7, rule="enospc")
    assert localize(scan, [hang, enospc]).primary is enospc
    alone = localize(scan, [hang])
    assert alone.primary is hang and alone.scope == "global" and alone.category == "software"


def test_healthy_when_only_anomalies_and_symptoms() -> None:
    scan = _scan()
    v = Localizer().localize(scan, [finding("n1", 1020.0, role="anomaly", category="unknown", score=0.9),
                                    finding("n2", 1020.0, role="symptom", score=0.9)])
    assert v.status == "healthy" and v.suspects == [] and v.primary is None


def test_inherited_time_does_not_win_the_earliest_root() -> None:
    scan = _scan()
    stamped = finding("n3", 1051.0, rule="xid-79", score=0.9)
    inherited = finding("n1", 1001.0, rule="cuda-error", score=0.9)
    inherited.records[0].text = "RuntimeError: CUDA error: unknown error"  # no timestamp of its own
    v = localize(scan, [inherited, stamped])
    assert v.primary is stamped


def test_node_for_host_normalises_names() -> None:
    scan = _scan()
    assert node_for_host(scan, "N3.cluster.local") == "n3"
    assert node_for_host(scan, "elsewhere") is None


def test_launcher_summary_quoting_the_error_is_not_root_evidence() -> None:
    scan = _scan()
    err = finding("n2", 1051.0, category="oom", rule="cuda-oom", text="torch.OutOfMemoryError: CUDA out of memory")
    summary = rec("12:00:00 Root Cause (first observed failure): ... torch.OutOfMemoryError: CUDA out of memory",
                  node="n2", time=1052.0, line=40, file="launcher.log")
    err.records.append(summary)  # the OOM rule also matched the launcher's summary that quotes it
    confirm = Finding("rules", "unknown", "confirmation", 0.3, "torchelastic names rank 2", node="n2", time=1052.0,
                      rule="elastic-root-cause", records=[summary], data={"scope": "node"})
    v = localize(scan, [err, confirm])
    roots = [r for f, role, recs in zip(v.findings, v.roles, v.records, strict=True) if role == "root" for r in recs]
    assert [r.file for r in roots] == ["n2-kern.log"]


def test_companion_lines_on_the_faulty_node_join_the_root_evidence() -> None:
    scan = _scan()
    xid = finding("n3", 1051.0, rule="xid-48", score=0.94)
    remap = finding("n3", 1051.0, role="confirmation", rule="xid-63", score=0.25, line=2)
    far = finding("n3", 5000.0, role="symptom", rule="pcie-aer-corrected", score=0.2, line=3)
    other_kind = finding("n3", 1052.0, role="symptom", category="unknown", rule="elastic-worker-failed", line=4)
    elsewhere = finding("n1", 1051.5, role="symptom", rule="cuda-unknown-error", line=5)
    v = localize(scan, [xid, remap, far, other_kind, elsewhere])
    roles = {f.rule: role for f, role in zip(v.findings, v.roles, strict=True)}
    assert roles == {"xid-48": "root", "xid-63": "root", "pcie-aer-corrected": "symptom",
                     "elastic-worker-failed": "symptom", "cuda-unknown-error": "symptom"}


def test_repeated_error_on_one_rank_counts_once_and_three_ranks_per_node() -> None:
    scan = _scan()
    f = finding("n2", 1051.0, category="storage", rule="eio", text="OSError: [Errno 5] Input/output error")
    f.records = [rec("OSError: [Errno 5] Input/output error", text=f"12:00:0{k} OSError: [Errno 5] Input/output error",
                     node="n2", rank=r, time=1051.0 + k, line=10 + k, file=f"rank{r}.log")
                 for k, r in enumerate([4, 5, 5, 6, 7])]
    v = localize(scan, [f])
    assert [(r.rank, r.line) for r in v.records[0]] == [(4, 10), (5, 11), (6, 13)]


def test_global_fault_shows_the_copies_of_the_lowest_ranks() -> None:
    scan = _scan()
    per_node = []
    for k, node in enumerate(NODES):
        f = finding(node, 1051.0 + k, category="user_config", scope="global", rule="cfg")
        f.records = [rec("12:00:00 ValueError: bad batch size", node=node, rank=2 * k + j, time=1051.0 + k,
                         line=1, file=f"rank{2 * k + j}.log") for j in range(2)]
        per_node.append(f)
    v = localize(scan, per_node)
    shown = sorted(r.rank for recs, role in zip(v.records, v.roles, strict=True) if role == "root" for r in recs)
    assert shown == [0, 1, 2, 3]


def test_signature_that_healthy_runs_print_too_is_not_the_cause() -> None:
    scan = _scan()
    benign = finding("n2", 1051.0, category="network", rule="ib-port-flap", text="mlx5 link flap")
    benign.records[0].template_id = "t-flap"
    from l4lite.scan.scanner import TemplateStat

    scan.templates["t-flap"] = TemplateStat("t-flap", "mlx5 link flap", count=1, nodes={"n2": 1})
    assert localize(scan, [benign]).status == "incident"
    v = Localizer(baseline_rates={"t-flap": 0.001}).localize(scan, [benign])
    assert v.status == "healthy" and benign.data["in_baseline"]
    assert Localizer(baseline_rates={"t-flap": 1e-9}).localize(scan, [benign]).status == "incident"  # far above
    benign.severity, benign.data = "critical", {}
    critical = Localizer(baseline_rates={"t-flap": 0.001}).localize(scan, [benign])
    assert critical.status == "incident" and not benign.data.get("in_baseline")  # a shared template is not enough


def test_the_node_missing_from_the_watchdog_reports_is_blamed() -> None:
    scan = _scan()
    text = "[Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=120, OpType=ALLREDUCE)"
    cascades = [finding(n, 1700.0, role="cascade", category="unknown", score=0.35, rule="nccl-watchdog-timeout",
                        text=text.format(r=k)) for k, n in enumerate(NODES) if n != "n2"]
    v = localize(scan, cascades)
    assert v.status == "incident" and v.suspects[0][0] == "n2"


def _elastic_summary(node: str, rank: int, exitcode: int, tail: str, line: int) -> Finding:
    text = ("============================================================\ntrain.py FAILED\n"
            "------------------------------------------------------------\nFailures:\n[1]:\n"
            f"  time      : 2026-12-03_15:08:11\n  host      : {node}\n  rank      : {rank - 1} (local_rank: 0)\n"
            "  exitcode  : -15 (pid: 7264)  (SIGTERM)\n  traceback : Traceback (most recent call last):\n"
            "  RuntimeError: [pair.cc:537] Read error: Connection reset by peer.\n"
            "------------------------------------------------------------\nRoot Cause (first observed failure):\n"
            f"[0]:\n  time      : 2026-12-03_15:08:11\n  host      : {node}\n  rank      : {rank} (local_rank: 1)\n"
            f"  exitcode  : {exitcode} (pid: 7266)\n  traceback : {tail}\n")
    r = rec("====", text=text, node=node, time=None, line=line, file=f"{node}/console.log")
    return Finding("rules", "unknown", "confirmation", 0.31, f"torchelastic names rank {rank}", node=node,
                   rule="elastic-root-cause", records=[r],
                   data={"scope": "node", "host": node, "failed_rank": str(rank),
                         "groups": {"when": "2026-12-03_15:08:11", "host": node, "exitcode": str(exitcode)}})


def test_a_summary_naming_a_killed_rank_beats_one_naming_a_rank_that_lost_its_peer() -> None:
    # Both agents stamp their first failure in the same second; the victim's node sorts first by name, and a
    # launcher banner new to the job sits on it. The rank whose own death the agent reports is the culprit.
    scan = _scan()
    victim = _elastic_summary("n1", 1, 1, "Traceback (most recent call last):\n    RuntimeError: [pair.cc:553] "
                              "Connection closed by peer [127.0.0.1]:20381.", line=150)
    killed = _elastic_summary("n2", 3, -9, "Signal 9 (SIGKILL) received by PID 7267", line=56)
    banner = Finding("filters", "unknown", "anomaly", 0.6, "template new to this job", node="n1", time=1001.0,
                     records=[rec("W1203 15:07:28.777000 7151 torch/distributed/run.py:874] ****", node="n1",
                                  time=1001.0, line=1, file="n1/console.log")])
    v = localize(scan, [victim, killed, banner])
    assert v.primary is killed and v.scope == "node"
    assert v.suspects[0][0] == "n2"


def _same_error_on(nodes: list[str], spread: float = 0.5) -> list[Finding]:
    out = []
    for k, node in enumerate(nodes):
        f = finding(node, 1051.0 + k * spread, category="storage", rule="ckpt-zip-corrupt", score=0.68,
                    text="RuntimeError: PytorchStreamReader failed reading zip archive")
        f.records[0].rank = 2 * k
        out.append(f)
    return out


def test_every_node_failing_with_the_same_error_is_a_job_wide_fault() -> None:
    # every rank loads the same truncated checkpoint: no node is at fault, whichever failed first
    scan = _scan()
    v = localize(scan, _same_error_on(NODES))
    assert v.scope == "global" and v.suspects == [] and v.alike == NODES
    assert v.category == "storage" and v.roles.count("root") == 4
    incident = build_incident(scan, v)
    assert incident.scope == "global" and incident.suspects == []
    assert "every node (4) failed with this same error" in incident.summary and "cascading" not in incident.summary


def test_the_same_error_on_some_nodes_or_far_apart_stays_a_node_fault() -> None:
    scan = _scan()
    some = localize(scan, _same_error_on(NODES[:3]))  # n4 logged nothing of it
    assert some.scope == "node" and some.alike == [] and some.suspects[0][0] == "n1"
    apart = localize(scan, _same_error_on(NODES, spread=600.0))  # one node after another, minutes apart
    assert apart.scope == "node" and apart.alike == [] and apart.suspects[0][0] == "n1"


def test_a_ranks_error_copied_to_another_file_is_shown_from_both() -> None:
    # the launcher's tee (console.log) and the rank's own stderr.log carry the same line: both are evidence,
    # while a repeat within one file counts once
    scan = _scan()
    f = finding("n2", 1051.0, category="software", rule="python-exception", text="RuntimeError: shape mismatch")
    f.records = [rec("RuntimeError: shape mismatch", node="n2", rank=3, time=1051.0, line=ln, file=name)
                 for name, ln in (("n2/console.log", 17), ("n2/console.log", 30), ("n2/attempt_0/1/stderr.log", 12))]
    v = localize(scan, [f])
    assert [(r.file, r.line) for r in v.records[0]] == [("n2/attempt_0/1/stderr.log", 12), ("n2/console.log", 17)]


def _generic_error_on(nodes: list[str], templates: list[str]) -> list[Finding]:
    """The generic exception signature (no rule knows the exception) on each node, one template per node."""
    out = []
    for k, (node, template) in enumerate(zip(nodes, templates, strict=True)):
        f = finding(node, 1051.0 + 0.4 * k, category="software", rule="python-exception", score=0.5,
                    text=f"RuntimeError: {template}", fallback=True)
        f.records[0].template_id = template
        out.append(f)
    return out


def test_every_node_printing_the_same_generic_exception_at_once_is_a_job_wide_fault() -> None:
    # an option the GPU model cannot run fails every rank the same way: the same line on every node
    v = localize(_scan(), _generic_error_on(NODES, ["cutlass cannot initialize"] * len(NODES)))
    assert v.scope == "global" and v.suspects == [] and v.alike == NODES


def test_a_generic_exception_that_differs_between_nodes_stays_a_node_fault() -> None:
    # that every rank raised something is not that it raised the same thing: one node's own error, peers' others
    v = localize(_scan(), _generic_error_on(NODES, ["cutlass cannot initialize"] + ["peer went away"] * 3))
    assert v.scope == "node" and v.alike == [] and v.suspects[0][0] == "n1"


def test_the_ray_controllers_reraise_does_not_outrank_a_stuck_rank_inferred_on_another_node() -> None:
    # the controller (on the driver's node n1) re-raises its workers' timeouts; rank 3 on n3 stopped in silence
    from l4lite.diagnose.traits import controller_report

    scan = _scan()
    reraise = finding("n1", 1060.0, category="software", score=0.3, rule="python-exception",
                      text="ray.train.WorkerGroupError: Training failed due to worker errors:")
    reraise.records.append(rec("RuntimeError: [gloo/transport/tcp/pair.cc:553] Connection closed by peer",
                               node="n1", time=1060.0, line=2, file="n1-kern.log"))
    stuck = Finding("hang", "software", "root", 0.6, "rank 3 stopped", node="n3", time=1051.0,
                    data={"signal": "stuck_rank", "inferred": True, "scope": "node"})
    assert controller_report(reraise)
    v = localize(scan, [reraise, stuck])
    assert v.status == "incident" and v.suspects[0][0] == "n3"
    # a rank's own error beside the re-raise is not a report of others: it still leads
    own = finding("n1", 1060.0, category="software", score=0.3, rule="python-exception",
                  text="RuntimeError: user code raised at step 14")
    assert not controller_report(own)
    assert localize(_scan(), [own, Finding("hang", "software", "root", 0.6, "rank 3 stopped", node="n3",
                                           time=1051.0, data={"signal": "stuck_rank", "inferred": True,
                                                              "scope": "node"})]).suspects[0][0] == "n1"
