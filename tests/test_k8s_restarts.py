"""Kubernetes container restarts read as attempts of the job: the kubelet's ``<ns>_<pod>_<uid>/<container>/N.log``,
``/var/log/containers`` links and ``kubectl logs --previous`` files. Built from real torchrun jobs
(``fixtures/real_jobs``) whose console output is what a PyTorchJob pod's container prints, written in the CRI
format, the hosts renamed to the pods that ran them: the verdict is the last failed attempt's, the earlier ones
are history, and no restart number or container name is ever a node."""

from __future__ import annotations

import json
import os
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from l4lite.api import analyze
from l4lite.cli.main import main
from l4lite.ingest.attempts import attempt_file, job_attempts
from l4lite.options import AnalyzeOptions

REAL = Path(__file__).resolve().parent.parent / "fixtures" / "real_jobs"
PODS = ("gpt-worker-0", "gpt-worker-1")
UIDS = {"gpt-worker-0": "5b1c9f2e-0d7a-4c4e-9e61-2f7f1d0c8a11", "gpt-worker-1": "0f3e2d1c-7b6a-4958-8e7f-6a5b4c3d2e1f"}
# attempt -> (real job, its node -> the pod it ran as): the faulty node of each job runs as a different pod
RUNS = [
    ("005-ddp-enospc", {"dgx-b200-11": "gpt-worker-0", "dgx-b200-03": "gpt-worker-1"}),  # storage, worker-1
    ("001-ddp-exception", {"a100-rack2-15": "gpt-worker-0", "a100-rack2-14": "gpt-worker-1"}),  # software, worker-0
    ("000-ddp-healthy", {"gpu-node-07": "gpt-worker-0", "gpu-node-12": "gpt-worker-1"}),  # healthy
]
START = datetime(2026, 12, 3, 14, 40, tzinfo=UTC)


def container_lines(job: str, node: str, host: str, at: datetime) -> list[str]:
    """A real node's console output as a pod's container printed it: its host renamed, CRI prefix."""
    lines = (REAL / job / node / "console.log").read_text(encoding="utf-8").splitlines()
    out = []
    for i, line in enumerate(lines):
        stamp = (at + timedelta(milliseconds=3 * i)).strftime("%Y-%m-%dT%H:%M:%S.%f") + "456Z"
        out.append(f"{stamp} stderr F {line.replace(node, host)}")
    return out


def plain_lines(job: str, node: str, pod: str) -> list[str]:
    return [line.replace(node, pod) for line in
            (REAL / job / node / "console.log").read_text(encoding="utf-8").splitlines()]


def write(path: Path, lines: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def kubelet_tree(root: Path, runs: list = RUNS, hosts: dict[tuple[int, str], str] | None = None) -> Path:
    """``/var/log/pods`` of the two pods, one file per container restart; ``hosts``: (restart, pod) -> the
    host name its lines carry (the pod name when not given, as a pod's own host name is)."""
    for restart, (job, pods) in enumerate(runs):
        for node, pod in pods.items():
            at = START + timedelta(minutes=10 * restart)
            host = (hosts or {}).get((restart, pod), pod)
            write(root / "pods" / f"default_{pod}_{UIDS[pod]}" / "pytorch" / f"{restart}.log",
                  container_lines(job, node, host, at))
    return root


def run(path: Path, tmp: Path, name: str = "incident.json") -> dict:
    out = tmp / name
    main(["analyze", str(path), "--no-store", "--quiet", "--json", str(out)])
    return json.loads(out.read_text())


def names_in(inc: dict) -> set[str]:
    nodes = {s["node"] for s in inc["suspects"]} | {e["node"] for e in inc["evidence"] if e.get("node")}
    return nodes | set((inc.get("extra") or {}).get("nodes") or [])


def check_verdict(inc: dict) -> None:
    assert inc["status"] == "incident"
    assert inc["category"] == "software" and inc["suspects"][0]["node"] == "gpt-worker-0"
    attempts = inc["attempts"]
    assert [a["attempt"] for a in attempts] == [0, 1, 2]
    assert [a["verdict"] for a in attempts] == [False, True, False]
    assert attempts[0]["status"] == "incident" and attempts[0]["category"] == "storage"
    assert attempts[0]["nodes"][0] == "gpt-worker-1"
    assert attempts[2]["status"] != "incident"
    assert "attempt 1 of 3" in inc["summary"]
    roots = [e for e in inc["evidence"] if e["role"] == "root"]
    assert roots and all("/1.log" in e["file"] or e["file"].startswith("gpt-worker-0") for e in roots)
    assert names_in(inc) <= set(PODS), names_in(inc)


def test_kubelet_restart_files_are_attempts_and_the_last_failed_one_decides(tmp_path: Path) -> None:
    inc = run(kubelet_tree(tmp_path / "logs"), tmp_path)
    check_verdict(inc)
    assert all(f.endswith("/0.log") for f in inc["attempts"][0]["files"])
    assert inc["attempts"][0]["pods"] == list(PODS)
    assert inc["evidence"] and all(e["file"].endswith("/1.log") for e in inc["evidence"] if e["role"] == "root")


@pytest.mark.parametrize("moved", [False, True])
def test_hosts_named_inside_decide_the_node(tmp_path: Path, moved: bool) -> None:
    """With host networking the lines name the machine, not the pod: the job context takes those hosts as the
    nodes; a pod rescheduled to another machine after its restart is blamed on the machine it failed on."""
    hosts = {(r, "gpt-worker-0"): "gke-a100-pool-7f3c-x2k9" for r in range(3)}
    hosts.update({(r, "gpt-worker-1"): "gke-a100-pool-7f3c-m4p1" for r in range(3)})
    if moved:  # worker-0 comes back on a third machine after its first restart
        hosts.update({(r, "gpt-worker-0"): "gke-a100-pool-7f3c-q8z5" for r in (1, 2)})
    inc = run(kubelet_tree(tmp_path / "logs", hosts=hosts), tmp_path)
    assert inc["category"] == "software"
    assert inc["suspects"][0]["node"] == ("gke-a100-pool-7f3c-q8z5" if moved else "gke-a100-pool-7f3c-x2k9")
    assert inc["attempts"][0]["nodes"][0] == "gke-a100-pool-7f3c-m4p1"
    assert names_in(inc) <= set(hosts.values()), names_in(inc)


def test_each_attempt_alone_gives_the_verdict_its_attempt_lists(tmp_path: Path) -> None:
    """The history is each attempt diagnosed as a job of its own, not a leftover of the whole."""
    tree = kubelet_tree(tmp_path / "logs")
    inc = analyze(str(tree), AnalyzeOptions(store=None))
    for attempt in inc.attempts or []:
        alone = tmp_path / f"alone-{attempt['attempt']}"
        for rel in attempt["files"]:
            dst = alone / rel.replace(f"/{attempt['attempt']}.log", "/0.log")
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(tree / rel, dst)
        single = analyze(str(alone), AnalyzeOptions(store=None))
        assert single.attempts is None
        assert (single.status, single.category) == (attempt["status"], attempt["category"])
        assert [s.node for s in single.suspects[:3]] == attempt["nodes"]


def test_container_links_and_their_copies_are_not_read_twice(tmp_path: Path) -> None:
    tree = kubelet_tree(tmp_path / "logs")
    base = run(tree, tmp_path, "base.json")
    for pod in PODS:
        newest = tree / "pods" / f"default_{pod}_{UIDS[pod]}" / "pytorch" / "2.log"
        link = tree / "containers" / f"{pod}_default_pytorch-{'ab' * 32}.log"
        link.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(os.path.relpath(newest, link.parent), link)  # as the kubelet makes it
        (tree / "copied").mkdir(exist_ok=True)
        shutil.copy(newest, tree / "copied" / link.name)  # as a collector that copies both trees leaves it
    inc = run(tree, tmp_path)
    check_verdict(inc)
    assert inc["stats"]["lines_read"] == base["stats"]["lines_read"]
    assert [len(a["files"]) for a in inc["attempts"]] == [len(a["files"]) for a in base["attempts"]] == [2, 2, 2]


def test_kubectl_previous_files_beside_the_current_ones(tmp_path: Path) -> None:
    """``kubectl logs POD --previous > POD.previous.log`` next to ``kubectl logs POD > POD.log``: two attempts."""
    logs = tmp_path / "logs"
    for attempt, name in ((0, "{pod}.previous.log"), (1, "{pod}.log")):
        job, pods = RUNS[attempt]
        for node, pod in pods.items():
            write(logs / name.format(pod=pod), plain_lines(job, node, pod))
    inc = run(logs, tmp_path)
    assert inc["category"] == "software" and inc["suspects"][0]["node"] == "gpt-worker-0"
    assert [(a["attempt"], a["verdict"], a["category"]) for a in inc["attempts"]] == \
        [(0, False, "storage"), (1, True, "software")]
    assert names_in(inc) <= set(PODS), names_in(inc)


def test_report_and_markdown_show_the_attempts(tmp_path: Path) -> None:
    inc_path = tmp_path / "incident.json"
    tree = kubelet_tree(tmp_path / "logs")
    assert main(["analyze", str(tree), "--no-store", "--quiet", "--json", str(inc_path),
                 "--html", str(tmp_path / "r.html")]) == 1
    html = (tmp_path / "r.html").read_text()
    section = html[html.index('id="attempts"'):html.index("</section>", html.index('id="attempts"'))]
    rows = section.split("<tr")[2:]
    assert len(rows) == 3 and 'class="verdict"' in rows[1] and "(this report)" in rows[1]
    assert "Storage" in rows[0] and "Software" in rows[1] and "healthy" in rows[2]
    assert main(["report", str(inc_path), "--markdown", str(tmp_path / "t.md")]) == 0
    md = (tmp_path / "t.md").read_text()
    section = md[md.index("### Attempts"):].split("\n\n")[1].splitlines()
    assert [row.split(":")[0] for row in section] == ["- **attempt 0**", "- **attempt 1 (this verdict)**",
                                                      "- **attempt 2**"]
    assert "Storage" in section[0] and "`gpt-worker-1`" in section[0] and "Software" in section[1]


@pytest.mark.parametrize(("rel", "pod", "restart"), [
    ("pods/default_gpt-worker-1_0f3e2d1c-7b6a-4958-8e7f-6a5b4c3d2e1f/pytorch/3.log", "gpt-worker-1", 3),
    ("pods/ml_gpt-worker-1_0f3e2d1c-7b6a-4958-8e7f-6a5b4c3d2e1f/pytorch/0.log.20261203-144221.gz",
     "gpt-worker-1", 0),
    (f"containers/gpt-worker-1_default_pytorch-{'0f' * 32}.log", "gpt-worker-1", None),
    ("gpt-worker-1.previous.log", "gpt-worker-1", -1),
])
def test_restart_layout_names(rel: str, pod: str, restart: int | None) -> None:
    found = attempt_file(rel)
    assert found is not None and (found.pod, found.restart) == (pod, restart)


def test_runs_order_by_restart_number_then_by_a_new_pod_uid() -> None:
    """Restart 10 after 9 (numbers, not text); a pod created again (new uid folder) after the old one's runs,
    whatever the uids' letters say; rotated pieces of one restart are one run."""
    old, new = "ffff0000-0000-4000-8000-000000000000", "00000000-0000-4000-8000-000000000000"
    rels = [f"pods/default_w-0_{old}/c/{n}.log" for n in (9, 10)] + [
        f"pods/default_w-0_{old}/c/9.log.20261203-101010.gz", f"pods/default_w-0_{new}/c/0.log", "dmesg.log"]
    times = {f"pods/default_w-0_{new}/c/0.log": 2000.0}
    attempts = job_attempts(rels, lambda r: times.get(r, 1000.0 if old in r else None))
    assert [a.files for a in attempts] == [
        [f"pods/default_w-0_{old}/c/9.log", f"pods/default_w-0_{old}/c/9.log.20261203-101010.gz"],
        [f"pods/default_w-0_{old}/c/10.log"],
        ["dmesg.log", f"pods/default_w-0_{new}/c/0.log"]]
    assert len(job_attempts([f"pods/default_w-0_{old}/c/0.log", "dmesg.log"], lambda r: None)) == 1
