"""History store on real SQLite files: schema, migration from v1, concurrency, baselines, fault library, fleet."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
import time
import types
from pathlib import Path

import pytest

from l4lite.cli.main import main
from l4lite.diagnose.incident import Evidence, Incident, Suspect
from l4lite.errors import L4Error
from l4lite.history import schema
from l4lite.history.store import DEFAULT_KEY_FIELDS, Store, describe_match, job_key
from l4lite.scan.scanner import JobScan, TemplateStat

REPO = Path(__file__).resolve().parent.parent


def make_scan(root: str, counts: dict[str, int], lines: int = 1000, info: dict | None = None,
              start: float | None = 1_700_000_000.0) -> JobScan:
    scan = JobScan(root=root, info=dict(info or {}), start_time=start, end_time=(start or 0) + 60 if start else None)
    scan.accounting.lines_read = lines
    scan.templates = {tid: TemplateStat(tid, f"template {tid} <*>", count=n) for tid, n in counts.items()}
    return scan


def make_incident(node: str | None, roots: list[str], cascades: list[str] = (), category: str = "network",
                  failure_time: str | None = "2026-11-03T10:00:00Z", status: str = "incident") -> Incident:
    evidence = [Evidence("n.log", i + 1, node, 0, None, f"root line {t}", t, "r", "root", 1.0)
                for i, t in enumerate(roots)]
    evidence += [Evidence("m.log", 100 + i, "other", 1, None, f"cascade {t}", t, "c", "cascade", 0.2)
                 for i, t in enumerate(cascades)]
    suspects = [Suspect(node, 0.9, ["root evidence"])] if node else []
    return Incident(status=status, category=category if status == "incident" else None, phase="train",
                    iteration=10, failure_time=failure_time, summary="s", suspects=suspects, evidence=evidence,
                    scope="node" if node else "global")


@pytest.fixture
def store(tmp_path: Path) -> Store:
    with Store(tmp_path / "h.sqlite3") as s:
        yield s


def count(path: Path, sql: str) -> int:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql).fetchone()[0]
    finally:
        conn.close()


# -- schema ------------------------------------------------------------------------------------------------------
def test_new_store_has_current_schema_in_wal_mode(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "folder" / "h.sqlite3"
    with Store(path) as s:
        assert s.schema_version == schema.SCHEMA_VERSION == 2
    conn = sqlite3.connect(path)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"jobs", "templates", "job_templates", "suspects", "evidence", "faults", "fault_templates", "meta"} <= tables
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()


def build_v1(path: Path) -> None:
    """A store as the first schema version wrote it, with one healthy and one analysed job."""
    conn = sqlite3.connect(path, isolation_level=None)
    for statement in schema.V1:
        conn.execute(statement)
    conn.execute("PRAGMA user_version = 1")
    conn.execute("INSERT INTO jobs (id, kind, key, path, recorded_at, lines_read) "
                 "VALUES (1, 'healthy', 'tag=llama', '/old/healthy', 1.7e9, 200)")
    conn.execute("INSERT INTO jobs (id, kind, key, path, recorded_at, lines_read, status, category, top_node, "
                 "failure_time) VALUES (2, 'analysis', 'tag=llama', '/old/failed', 1.7e9, 300, 'incident', "
                 "'gpu_hardware', 'node009', 1.7e9)")
    conn.executemany("INSERT INTO templates VALUES (?, ?)", [("t1", "step <*> loss <*>"), ("x79", "Xid 79")])
    conn.executemany("INSERT INTO job_templates VALUES (?, ?, ?)", [(1, "t1", 50), (2, "t1", 10), (2, "x79", 1)])
    conn.execute("INSERT INTO suspects VALUES (2, 0, 'node009', 0.95, 'gpu_hardware', '[]')")
    conn.execute("INSERT INTO evidence (job_id, position, template_id, role, node, file, line, text) "
                 "VALUES (2, 0, 'x79', 'root', 'node009', 'k.log', 7, 'NVRM: Xid 79')")
    conn.close()


def test_v1_store_is_migrated_and_keeps_its_data(tmp_path: Path) -> None:
    path = tmp_path / "v1.sqlite3"
    build_v1(path)
    with Store(path) as s:
        assert s.schema_version == 2
        assert s.baseline_templates("tag=llama") == {"t1": 50 / 200}
        assert [n["node"] for n in s.nodes()] == ["node009"]
        uids = [r[0] for r in s._conn.execute("SELECT uid FROM jobs ORDER BY id")]
        assert len(set(uids)) == 2 and all(len(u) == 32 for u in uids)
        # the v2 features work on the migrated data
        fault_id = s.confirm(2, "gpu_hardware", "GPU fell off the bus", "node009")
        match = s.match_fault(make_incident("node003", ["x79"], category="gpu_hardware"))
        assert match is not None and match["fault_id"] == fault_id and match["similarity"] == 1.0
    with Store(path) as s:  # opening again does not migrate again
        assert s.schema_version == 2 and len(s.jobs()) == 2


def test_frozen_v1_fixture_migrates_and_matches_the_v1_ddl(tmp_path: Path) -> None:
    dump = (REPO / "fixtures" / "history" / "store-v1.sql").read_text()
    path = tmp_path / "fixture.sqlite3"
    conn = sqlite3.connect(path)
    conn.executescript(dump)
    fixture_schema = sorted(r[0] for r in conn.execute("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL"))
    conn.close()
    fresh = sqlite3.connect(tmp_path / "fresh-v1.sqlite3")
    for statement in schema.V1:  # the V1 DDL kept in code must still be what version 1 wrote
        fresh.execute(statement)
    assert sorted(r[0] for r in fresh.execute("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL")) == \
        fixture_schema
    fresh.close()
    with Store(path) as s:
        assert s.schema_version == schema.SCHEMA_VERSION
        assert s.baseline_templates("tag=llama") == {"t1": 0.25}
        jobs = {j["job_id"]: j for j in s.jobs()}
        assert jobs[2]["top_node"] == "node009" and jobs[2]["category"] == "gpu_hardware"
        assert s.confirm(2, "gpu_hardware", "Xid 79") == 1


def test_store_from_a_newer_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "new.sqlite3"
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    with pytest.raises(L4Error, match=r"schema version 99, newer"):
        Store(path)


def test_not_a_database_is_a_one_line_error(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("this is not sqlite\n" * 200)
    with pytest.raises(L4Error) as info:
        Store(path)
    assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_default_path_env_and_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("L4LITE_STORE", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert Store.default_path() == tmp_path / "xdg" / "l4lite" / "history.sqlite3"
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert Store.default_path() == tmp_path / "home" / ".local" / "share" / "l4lite" / "history.sqlite3"
    monkeypatch.setenv("L4LITE_STORE", str(tmp_path / "env.sqlite3"))
    assert Store.default_path() == tmp_path / "env.sqlite3"
    with Store() as s:
        assert s.path == tmp_path / "env.sqlite3"
    assert (tmp_path / "env.sqlite3").exists()


# -- concurrency -------------------------------------------------------------------------------------------------
WRITER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from l4lite.history.store import Store
    from l4lite.diagnose.incident import Evidence, Incident, Suspect
    from l4lite.scan.scanner import JobScan, TemplateStat

    store_path, go, name, n = sys.argv[1], Path(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    while not go.exists():
        time.sleep(0.001)
    with Store(store_path) as store:  # both processes create and migrate the same new file at once
        for i in range(n):
            scan = JobScan(root=f"/{name}/{i}", start_time=float(i))
            scan.accounting.lines_read = 100
            scan.templates = {f"t{k}": TemplateStat(f"t{k}", f"tpl {k}", count=1) for k in range(i % 7, i % 7 + 20)}
            scan.templates[f"{name}-{i}"] = TemplateStat(f"{name}-{i}", "own", count=3)
            store.add_healthy(scan, "shared")
            incident = Incident("incident", "network", "train", i, None, "s", [Suspect(name, 0.9)],
                                [Evidence("f", 1, name, 0, None, "x", f"t{i % 5}", None, "root", 1.0)])
            store.record_analysis(incident, scan, "shared")
            store.baseline_templates("shared")
    print("done", n)
    """
)


def test_two_processes_writing_at_once_lose_nothing(tmp_path: Path) -> None:
    path, go, script = tmp_path / "shared.sqlite3", tmp_path / "go", tmp_path / "writer.py"
    script.write_text(WRITER)
    n = 120
    procs = [
        subprocess.Popen([sys.executable, str(script), str(path), str(go), name, str(n)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
        for name in ("alpha", "beta")
    ]
    time.sleep(0.3)  # let both interpreters start and wait for the signal
    go.touch()
    outputs = [p.communicate(timeout=120) for p in procs]
    for p, (out, err) in zip(procs, outputs, strict=True):
        assert p.returncode == 0, err
        assert "locked" not in err and out.strip() == f"done {n}"
    assert count(path, "SELECT COUNT(*) FROM jobs") == 2 * 2 * n
    assert count(path, "SELECT COUNT(*) FROM jobs WHERE kind = 'healthy'") == 2 * n
    assert count(path, "SELECT COUNT(*) FROM job_templates") == 2 * n * 21
    assert count(path, "SELECT COUNT(*) FROM evidence") == 2 * n
    assert count(path, "SELECT COUNT(*) FROM suspects") == 2 * n
    assert count(path, "PRAGMA user_version") == 2
    with Store(path) as s:
        base = s.baseline_templates("shared")
        assert base["alpha-0"] == pytest.approx(3 / (2 * n * 100))
        assert {e["node"]: e["incidents"] for e in s.nodes()} == {"alpha": n, "beta": n}


def test_writer_that_cannot_get_the_lock_fails_with_one_line(tmp_path: Path) -> None:
    path = tmp_path / "busy.sqlite3"
    Store(path).close()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with Store(path, busy_timeout=0.2) as s, pytest.raises(L4Error, match="locked by another process"):
            s.add_healthy(make_scan("/j", {"a": 1}), "k")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert count(path, "SELECT COUNT(*) FROM jobs") == 0


# -- keys and baselines ------------------------------------------------------------------------------------------
def test_job_key_from_facts_aliases_tag_and_fields() -> None:
    scan = make_scan("/j", {}, info={"framework": "Megatron", "tp": 4, "pipeline_model_parallel_size": 2,
                                     "world_size": 64, "seed": 7})
    assert job_key(scan) == "framework=megatron;world_size=64;tensor_parallel=4;pipeline_parallel=2"
    assert job_key(scan, tag="llama-70b") == "tag=llama-70b"
    assert job_key(scan, key_fields=("world_size",)) == "world_size=64"
    assert job_key(make_scan("/k", {})) == "default"
    assert "seed" not in DEFAULT_KEY_FIELDS


def test_key_fields_are_a_setting_of_the_store(store: Store) -> None:
    scan = make_scan("/j", {}, info={"model": "llama", "world_size": 8})
    assert store.job_key(scan) == "model=llama;world_size=8"
    store.set_key_fields(["model"])
    assert store.key_fields == ("model",)
    assert store.job_key(scan) == "model=llama"
    with pytest.raises(L4Error):
        store.set_key_fields([" "])


def test_cross_job_baseline_is_the_union_of_healthy_jobs_of_the_key(store: Store) -> None:
    store.add_healthy(make_scan("/h1", {"a": 10, "b": 2}, lines=100), "k")
    store.add_healthy(make_scan("/h2", {"a": 30, "c": 1}, lines=300), "k")
    store.add_healthy(make_scan("/other", {"z": 5}, lines=100), "other")
    base = store.baseline_templates("k")
    assert base == pytest.approx({"a": 40 / 400, "b": 2 / 400, "c": 1 / 400})
    assert store.baseline_templates("nothing") == {}
    assert store.baseline_summary("k") == {"jobs": 2, "lines": 400, "templates": 3}
    # re-adding the same job replaces it instead of counting it twice
    store.add_healthy(make_scan("/h1", {"a": 10}, lines=100), "k")
    assert store.baseline_templates("k") == pytest.approx({"a": 40 / 400, "c": 1 / 400})


def test_failing_transaction_leaves_no_partial_job(store: Store) -> None:
    store.add_healthy(make_scan("/ok", {"a": 1}), "k")
    bad = make_scan("/bad", {"a": 1, "b": 2, "c": -1})  # the last row violates a CHECK constraint
    with pytest.raises(sqlite3.IntegrityError):
        store.add_healthy(bad, "k")
    assert [j["path"] for j in store.jobs()] == ["/ok"]
    assert store.baseline_templates("k") == {"a": 1 / 1000}
    assert count(store.path, "SELECT COUNT(*) FROM job_templates") == 1
    incident = make_incident("n1", ["a"])
    incident.evidence.append(Evidence("f", 1, None, None, None, "x", "q", None, None, 0.0))  # role NULL
    with pytest.raises(sqlite3.IntegrityError):
        store.record_analysis(incident, make_scan("/failed", {"a": 1}), "k")
    assert [j["path"] for j in store.jobs()] == ["/ok"]
    assert count(store.path, "SELECT COUNT(*) FROM suspects") == 0


def test_reanalysing_a_job_updates_its_record(store: Store) -> None:
    scan = make_scan("/job", {"a": 1})
    first = store.record_analysis(make_incident("n1", ["a"]), scan, "k")
    second = store.record_analysis(make_incident("n2", ["a", "b"]), scan, "k")
    assert first == second
    jobs = store.jobs()
    assert len(jobs) == 1 and jobs[0]["top_node"] == "n2"
    assert count(store.path, "SELECT COUNT(*) FROM evidence") == 2


# -- fault library -----------------------------------------------------------------------------------------------
def test_confirm_and_match_by_root_template_overlap(store: Store) -> None:
    job = store.record_analysis(make_incident("node017", ["mlx5", "ibv12"], cascades=["watchdog"]),
                                make_scan("/j1", {"mlx5": 1}), "k")
    fault = store.confirm(job, "network", "IB cable", node="node017")
    # the same signature on another node, with an extra root line: Jaccard 2/3
    match = store.match_fault(make_incident("node021", ["mlx5", "ibv12", "nccl-warn"], cascades=["watchdog"]))
    assert match is not None
    assert match["fault_id"] == fault and match["cause"] == "IB cable" and match["node"] == "node017"
    assert match["similarity"] == pytest.approx(2 / 3, abs=1e-3) and match["same_node"] is False
    assert match["message"] == describe_match(match)
    assert match["message"].startswith(f"matches confirmed fault #{fault} of 20")
    assert match["message"].endswith(": IB cable on node017")
    # cascades do not count: a job that only shares the watchdog timeout does not match
    assert store.match_fault(make_incident("node3", ["xid79"], cascades=["watchdog"])) is None
    # below the threshold (1/3)
    assert store.match_fault(make_incident("node3", ["mlx5", "x", "y"])) is None
    assert store.match_fault(make_incident(None, [])) is None


def test_best_match_wins_and_reconfirming_updates(store: Store) -> None:
    j1 = store.record_analysis(make_incident("a", ["p", "q"]), make_scan("/1", {}), "k")
    j2 = store.record_analysis(make_incident("b", ["p", "q", "r"]), make_scan("/2", {}), "k")
    f1 = store.confirm(j1, "network", "cable")
    f2 = store.confirm(j2, "gpu_hardware", "gpu")
    assert store.match_fault(make_incident("c", ["p", "q", "r"]))["fault_id"] == f2
    assert store.match_fault(make_incident("c", ["p", "q"]))["fault_id"] == f1
    assert store.confirm(j1, "host", "PSU", node="a") == f1
    assert [(f["fault_id"], f["category"], f["cause"]) for f in store.faults()][0] == (f1, "host", "PSU")
    assert len(store.faults()) == 2


def test_confirm_errors(store: Store) -> None:
    healthy = store.add_healthy(make_scan("/h", {"a": 1}), "k")
    empty = store.record_analysis(make_incident(None, [], status="healthy"), make_scan("/e", {}), "k")
    with pytest.raises(L4Error, match="no job #99"):
        store.confirm(99, "network", "x")
    with pytest.raises(L4Error, match="unknown category"):
        store.confirm(empty, "cosmic_rays", "x")
    with pytest.raises(L4Error, match="recorded as healthy"):
        store.confirm(healthy, "network", "x")
    with pytest.raises(L4Error, match="no evidence"):
        store.confirm(empty, "network", "x")
    assert store.faults() == []


# -- fleet -------------------------------------------------------------------------------------------------------
def test_fleet_ranks_nodes_by_incidents_as_top_suspect(store: Store) -> None:
    records = [
        ("node07", "gpu_hardware", "2026-10-01T00:00:00Z"),
        ("node07", "gpu_hardware", "2026-11-01T00:00:00Z"),
        ("node07", "network", "2026-11-02T00:00:00Z"),
        ("node03", "network", "2026-11-05T00:00:00Z"),
        ("node11", "storage", "2026-09-01T00:00:00Z"),
    ]
    for i, (node, category, when) in enumerate(records):
        store.record_analysis(make_incident(node, [f"t{i}"], category=category, failure_time=when),
                              make_scan(f"/job{i}", {}), "k")
    store.record_analysis(make_incident(None, ["nan"], category="numerical"), make_scan("/global", {}), "k")
    store.record_analysis(make_incident("node99", [], status="healthy"), make_scan("/fine", {}), "k")
    fleet = store.nodes()
    assert [e["node"] for e in fleet] == ["node07", "node03", "node11"]
    assert fleet[0]["incidents"] == 3 and fleet[0]["categories"] == {"gpu_hardware": 2, "network": 1}
    assert fleet[0]["last_seen"] == "2026-11-02T00:00:00Z"
    recent = store.nodes(since="2026-10-15")
    assert [(e["node"], e["incidents"]) for e in recent] == [("node07", 2), ("node03", 1)]
    assert recent[0]["categories"] == {"gpu_hardware": 1, "network": 1}
    assert [e["node"] for e in store.nodes(since="2026-11-03")] == ["node03"]
    with pytest.raises(L4Error, match="--since"):
        store.nodes(since="last tuesday")


# -- export / import ---------------------------------------------------------------------------------------------
def test_export_import_round_trip(tmp_path: Path, store: Store) -> None:
    job = store.record_analysis(make_incident("node017", ["mlx5", "ibv12"]), make_scan("/j", {"mlx5": 1}), "k")
    store.confirm(job, "network", "IB cable", node="node017")
    store.add_healthy(make_scan("/h", {"a": 5, "b": 1}, lines=50, info={"model": "llama"}), "model=llama")
    data = json.loads(json.dumps(store.export_json()))
    with Store(tmp_path / "other.sqlite3") as other:
        assert other.import_json(data, "a.json") == {
            "faults_added": 1, "faults_skipped": 0, "healthy_added": 1, "healthy_skipped": 0}
        assert other.import_json(data, "a.json")["faults_skipped"] == 1  # idempotent
        match = other.match_fault(make_incident("node002", ["mlx5", "ibv12"]))
        assert match is not None and match["cause"] == "IB cable" and match["job_id"] is None
        assert other.baseline_templates("model=llama") == pytest.approx({"a": 0.1, "b": 0.02})
        assert other.faults()[0]["origin"] == "a.json"
        again = other.export_json()
    assert again["faults"] == data["faults"][:1] or again["faults"][0]["uid"] == data["faults"][0]["uid"]
    assert again["templates"] == data["templates"]


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        ([1, 2], "top level: expected a JSON object"),
        ({"schema": "other/1"}, "schema: not an l4lite history export"),
        ({"schema": "l4lite.history/1", "faults": {}}, "faults: expected a list"),
        ({"schema": "l4lite.history/1", "faults": [{"uid": "u", "confirmed_at": "2026-01-01", "category": "bad",
                                                     "cause": "c", "templates": ["t"]}]}, "faults[0].category"),
        ({"schema": "l4lite.history/1", "faults": [{"uid": "u", "confirmed_at": "2026-01-01",
                                                     "category": "network", "cause": "c", "templates": []}]},
         "faults[0].templates"),
        ({"schema": "l4lite.history/1", "healthy_jobs": [{"uid": "u", "key": "k", "path": "p",
                                                           "recorded_at": "2026-01-01", "lines_read": 5,
                                                           "counts": {"t": -3}}]}, "healthy_jobs[0].counts['t']"),
        ({"schema": "l4lite.history/1", "faults": [{"uid": "u", "confirmed_at": "yesterday",
                                                     "category": "network", "cause": "c", "templates": ["t"]}]},
         "faults[0].confirmed_at"),
    ],
)
def test_import_rejects_malformed_data_with_one_line(store: Store, data: object, fragment: str) -> None:
    with pytest.raises(L4Error) as info:
        store.import_json(data, "lib.json")
    message = str(info.value)
    assert message.startswith("lib.json: ") and fragment in message and "\n" not in message
    assert store.faults() == [] and store.jobs() == []


# -- command line ------------------------------------------------------------------------------------------------
def test_cli_confirm_jobs_nodes_faults(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "cli.sqlite3"
    with Store(path) as s:
        job = s.record_analysis(make_incident("node017", ["mlx5"]), make_scan("/runs/7", {}), "tag=x")
    assert main(["history", "confirm", str(job), "--category", "network", "--cause", "IB cable",
                 "--node", "node017", "--store", str(path)]) == 0
    assert "confirmed fault #1" in capsys.readouterr().out
    assert main(["history", "jobs", "--store", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:3] == ["JOB", "RECORDED", "KIND"] and "/runs/7" in out[1] and "node017" in out[1]
    assert main(["history", "nodes", "--json", "--store", str(path)]) == 0
    fleet = json.loads(capsys.readouterr().out)
    assert fleet[0]["node"] == "node017" and fleet[0]["confirmed_faults"] == 1
    assert main(["history", "--store", str(path), "faults", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["cause"] == "IB cable"
    assert main(["history", "confirm", "42", "--category", "network", "--cause", "x", "--store", str(path)]) == 2
    assert "no job #42" in capsys.readouterr().err


def test_cli_export_import_and_bad_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src, dst, out = tmp_path / "a.sqlite3", tmp_path / "b.sqlite3", tmp_path / "lib.json"
    with Store(src) as s:
        s.confirm(s.record_analysis(make_incident("n1", ["x"]), make_scan("/j", {}), "k"), "storage", "Lustre OST")
    assert main(["history", "export", str(out), "--store", str(src)]) == 0
    assert main(["history", "import", str(out), "--store", str(dst)]) == 0
    assert "imported 1 faults" in capsys.readouterr().out
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": "l4lite.history/1",\n "faults": [oops]}')
    assert main(["history", "import", str(bad), "--store", str(dst)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"l4lite: error: {bad}:2: invalid JSON") and "\n" not in err


def test_cli_add_requires_healthy_and_records_scanned_jobs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """The command's own logic, with a stand-in for the pipeline (its real use is in the end-to-end test)."""
    jobs = []
    for name in ("job1", "broken"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "train.log").write_text("step 1\n")
        jobs.append(str(tmp_path / name))
    fake = types.ModuleType("l4lite.api")

    class AnalyzeOptions:
        def __init__(self, **kw: object) -> None:
            self.kw = kw

    fake.AnalyzeOptions = AnalyzeOptions
    fake.load_rules = lambda options: None
    fake.scan_job = lambda paths, options, rules=None: make_scan(paths[0], {"a": 2}, lines=10, info={"model": "m"})
    fake.diagnose = lambda scan, options, rules=None: make_incident(
        "n1", ["x"], status="incident" if "broken" in scan.root else "healthy")
    monkeypatch.setitem(sys.modules, "l4lite.api", fake)
    monkeypatch.setattr("l4lite.api", fake, raising=False)
    path = tmp_path / "s.sqlite3"
    assert main(["history", "add", jobs[0], "--store", str(path)]) == 2
    assert "--healthy" in capsys.readouterr().err
    assert main(["history", "add", *jobs, "--healthy", "--store", str(path)]) == 2
    assert "broken: not recorded, it looks failed" in capsys.readouterr().err
    with Store(path) as s:
        assert [j["path"] for j in s.jobs()] == [jobs[0]]
        assert s.baseline_templates("model=m") == {"a": 0.2}
    assert main(["history", "add", jobs[1], "--healthy", "--force", "--store", str(path)]) == 0
    assert main(["history", "add", jobs[0], "--healthy", "--tag", "nightly", "--store", str(path)]) == 0
    with Store(path) as s:  # adding the same job again with a tag moves it to the tag's key
        assert s.baseline_templates("model=m") == {"a": 0.2}
        assert s.baseline_templates("tag=nightly") == {"a": 0.2}
        assert len(s.jobs()) == 2
    assert main(["history", "add", str(tmp_path / "missing"), "--healthy", "--store", str(path)]) == 2


# -- end to end with the simulator and the pipeline --------------------------------------------------------------
def test_analyze_uses_baseline_records_jobs_and_matches_confirmed_faults(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    pipeline = pytest.importorskip("l4lite.api")
    from l4lite.simulate.cluster import JobSpec
    from l4lite.simulate.generate import generate

    def sim(scenario: str, seed: int) -> str:
        out = tmp_path / f"{scenario}-{seed}"
        generate(JobSpec(scenario=scenario, nodes=2, gpus_per_node=1, iterations=20, seed=seed, fmt="megatron",
                         layout="per-node-dir", naming="node"), out)
        (out / "ground_truth.json").unlink()
        return str(out)

    store = tmp_path / "store.sqlite3"
    healthy, hard_negative = sim("healthy_hard_negatives", 3), sim("healthy_hard_negatives", 4)
    without = pipeline.analyze([hard_negative], pipeline.AnalyzeOptions())
    assert main(["history", "add", healthy, "--healthy", "--store", str(store)]) == 0
    assert "healthy job #1" in capsys.readouterr().out
    with_store = pipeline.analyze([hard_negative], pipeline.AnalyzeOptions(store=str(store)))
    assert not with_store.is_incident
    assert len(with_store.evidence) < len(without.evidence)  # cross-job filtering drops the benign templates

    first = pipeline.analyze([sim("ib_link_down", 1)], pipeline.AnalyzeOptions(store=str(store)))
    assert first.is_incident and first.matched_fault is None
    job_id = first.job["history_id"]
    assert main(["history", "confirm", str(job_id), "--category", "network", "--cause", "IB cable",
                 "--node", first.suspects[0].node, "--store", str(store)]) == 0
    second = pipeline.analyze([sim("ib_link_down", 2)], pipeline.AnalyzeOptions(store=str(store)))
    assert second.matched_fault is not None and second.matched_fault["cause"] == "IB cable"
    assert "matches confirmed fault #1 of " in second.summary
    with Store(store) as s:
        assert [j["kind"] for j in s.jobs()] == ["analysis", "analysis", "analysis", "healthy"]
        assert {e["node"] for e in s.nodes()} == {first.suspects[0].node, second.suspects[0].node}
