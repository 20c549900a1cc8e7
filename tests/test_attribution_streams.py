"""A labelled stream's node from what its own lines say: a JAX job under ``srun --label`` (real job 078) writes
``2: ... process 2/4 on compute-beta: ...`` and no host header at all; the job's known hosts (its node folders)
tie such a stream, and its rank, to the host it names, unless a stronger line says otherwise."""

from __future__ import annotations

from pathlib import Path

from l4lite.ingest.attribution import known_hosts_pattern, stream_hosts, stream_rank
from l4lite.ingest.context import JobContext, build_context
from l4lite.ingest.files import discover
from l4lite.ingest.reader import IngestOptions, iter_records
from l4lite.records import Accounting, Record

ROOT = Path(__file__).resolve().parent.parent
JOB_078 = ROOT / "fixtures" / "real_jobs" / "078-jax-exception_srun"
HOSTS = known_hosts_pattern(["compute-alpha", "compute-beta"])
# the real lines of 078 (slurm-4178.out)
BANNER = "{r}: I1204 14:21:43.734887 140438044400512 train_jax.py:71] process {r}/4 on {h}: 1 local device(s), 4 global"
CONNECT = "{r}: I1204 14:21:42.165485 140438044400512 distributed.py:172] Connecting to JAX distributed service on {h}:29556"
STEP = "{r}: I1204 14:22:17.972746 140438044400512 train_jax.py:107] step 1/40 loss=2.7659 grad_norm=2.542 (16.85s)"


def _ingest(*paths: Path) -> tuple[list[Record], Accounting]:
    acc = Accounting()
    recs = list(iter_records([str(p) for p in paths], IngestOptions(), acc))
    assert acc.balanced
    return recs, acc


def _context(job: Path) -> JobContext:
    acc = Accounting()
    return build_context(discover([str(job)], acc).files, accounting=acc)


def _job(root: Path, console: list[str], name: str = "slurm-4178.out") -> Path:
    for host in ("compute-alpha", "compute-beta"):
        (root / host).mkdir(parents=True, exist_ok=True)
        (root / host / "kern.log").write_text("", encoding="utf-8")
    (root / name).write_text("\n".join(console) + "\n", encoding="utf-8")
    return root


def test_the_raising_jax_process_is_on_the_host_its_banner_names() -> None:
    ctx = _context(JOB_078)
    assert ctx.task_hosts["slurm-4178.out"] == {"0": "compute-alpha", "1": "compute-alpha", "2": "compute-beta",
                                                "3": "compute-beta"}
    assert sorted(ctx.mention_ties) == [(0, "compute-alpha"), (1, "compute-alpha"), (2, "compute-beta"),
                                        (3, "compute-beta")]
    recs, _ = _ingest(JOB_078)
    tb = [r for r in recs if "RuntimeError: shape mismatch" in r.text]
    assert tb and {(r.node, r.rank) for r in tb} == {("compute-beta", 2)}
    by_rank: dict[int | None, set[str | None]] = {}
    for r in recs:
        by_rank.setdefault(r.rank, set()).add(r.node)
    assert by_rank[0] == by_rank[1] == {"compute-alpha"}
    assert by_rank[2] == by_rank[3] == {"compute-beta"}


def test_an_endpoint_or_a_peer_is_not_where_a_stream_runs() -> None:
    assert HOSTS is not None
    # the coordination service's endpoint: every process names rank 0's host
    assert stream_hosts([CONNECT.format(r=2, h="compute-alpha"), STEP.format(r=2)], HOSTS) == {}
    assert stream_hosts(["2: rendezvous master=compute-alpha", "2: peers: compute-alpha", "2: sent to compute-alpha"],
                        HOSTS) == {}
    # a line naming several hosts is a peer list
    assert stream_hosts(["2: hosts compute-alpha compute-beta"] * 3, HOSTS) == {}
    # a whole word only: another machine's name that starts alike, a path
    assert stream_hosts(["2: on compute-alpha2", "2: /scratch/compute-alpha/x", "2: compute-alpha-old"], HOSTS) == {}
    # the endpoint does not hide the stream's own host named beside it
    lines = [CONNECT.format(r=2, h="compute-alpha"), BANNER.format(r=2, h="compute-beta")]
    assert stream_hosts(lines, HOSTS) == {"2": "compute-beta"}


def test_a_stream_must_name_one_host_consistently() -> None:
    assert HOSTS is not None
    two = [BANNER.format(r=2, h="compute-beta"), "2: retrying on compute-alpha"]
    assert stream_hosts(two, HOSTS) == {}
    # once, beside a peer list naming another host: not enough
    once = [BANNER.format(r=2, h="compute-beta"), "2: hosts compute-alpha compute-beta"]
    assert stream_hosts(once, HOSTS) == {}
    # twice, beside that peer list: the stream's own
    assert stream_hosts([*once, BANNER.format(r=2, h="compute-beta")], HOSTS) == {"2": "compute-beta"}
    # the fully qualified spelling is the same machine
    assert stream_hosts(["[rank5]: running on COMPUTE-BETA.cluster.local"], HOSTS) == {"[rank5]": "compute-beta"}


def test_which_streams_name_a_global_rank() -> None:
    assert stream_rank("2", label_tasks=False) == 2
    assert stream_rank("2", label_tasks=True) is None  # ``srun --label torchrun``: the label is a node's index
    assert stream_rank("[rank7]", label_tasks=False) == 7
    assert stream_rank("[default1]", label_tasks=False) is None  # a local rank


def test_torchrun_prefixed_streams_take_the_host_they_name(tmp_path: Path) -> None:
    job = _job(tmp_path / "job", [
        "[rank0]: training on compute-alpha", "[rank3]: training on compute-beta",
        "[default1]: local worker on compute-beta", "[default1]: step 1", "[rank3]: step 1",
        "[rank3]: RuntimeError: boom",
    ], name="console.log")
    ctx = _context(job)
    assert ctx.task_hosts["console.log"] == {"[rank0]": "compute-alpha", "[rank3]": "compute-beta",
                                             "[default1]": "compute-beta"}
    assert sorted(ctx.mention_ties) == [(0, "compute-alpha"), (3, "compute-beta")]  # no tie for a local rank
    recs, _ = _ingest(job)
    assert {r.node for r in recs if r.text.startswith("[default1]")} == {"compute-beta"}
    assert {r.node for r in recs if "boom" in r.text} == {"compute-beta"}


def test_a_host_header_beats_a_mention(tmp_path: Path) -> None:
    # label 2's NCCL header names compute-alpha; its banner naming compute-beta does not move it
    nccl = "2: compute-alpha:5756:5790 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>"
    job = _job(tmp_path / "job", [nccl, nccl, BANNER.format(r=2, h="compute-beta"), STEP.format(r=2),
                                  BANNER.format(r=3, h="compute-beta"), STEP.format(r=3)])
    ctx = _context(job)
    assert ctx.task_hosts["slurm-4178.out"] == {"2": "compute-alpha", "3": "compute-beta"}
    assert ctx.mention_ties == [(3, "compute-beta")]
    recs, _ = _ingest(job)
    assert {r.node for r in recs if r.text.startswith("2:")} == {"compute-alpha"}
    assert {r.node for r in recs if r.text.startswith("3:")} == {"compute-beta"}


def test_a_mention_tie_loses_to_a_nccl_rank_tie(tmp_path: Path) -> None:
    # rank 2 named by its stream as on compute-beta, but compute-alpha's NCCL init line says it holds rank 2
    opts = IngestOptions()
    job = _job(tmp_path / "job", [BANNER.format(r=2, h="compute-beta"), STEP.format(r=2)])
    (job / "compute-alpha" / "nccl.log").write_text(
        "compute-alpha:5756:5790 [0] NCCL INFO comm 0x55d0 rank 2 nranks 4 cudaDev 0 busId 1000 - Init COMPLETE\n",
        encoding="utf-8")
    acc = Accounting()
    list(iter_records([str(job)], opts, acc))
    assert opts.rank_map.node_of(2) == "compute-alpha"


def test_a_file_its_path_places_keeps_its_node(tmp_path: Path) -> None:
    job = _job(tmp_path / "job", [])
    (job / "slurm-4178.out").unlink()
    (job / "compute-alpha" / "console.log").write_text(
        BANNER.format(r=2, h="compute-beta") + "\n" + STEP.format(r=2) + "\n", encoding="utf-8")
    ctx = _context(job)
    assert ctx.task_hosts == {} and ctx.mention_ties == []
    recs, _ = _ingest(job)
    assert {r.node for r in recs} == {"compute-alpha"}


def test_mention_ties_survive_the_context_round_trip() -> None:
    ctx = _context(JOB_078)
    again = JobContext.from_dict(ctx.to_dict())
    assert again.mention_ties == ctx.mention_ties and again.task_hosts == ctx.task_hosts


def test_local_rank_streams_of_two_nodes_tie_nothing(tmp_path: Path) -> None:
    # a merged console of two nodes: each node has a [default0]; the two name two hosts, so neither is tied
    job = _job(tmp_path / "job", [
        "[default0]: worker on compute-alpha", "[default1]: worker on compute-beta", "[rank3]: on compute-beta",
        "[default0]: step 1", "[default1]: step 1",
    ], name="console.log")
    ctx = _context(job)
    assert ctx.task_hosts["console.log"] == {"[rank3]": "compute-beta"}
    recs, _ = _ingest(job)
    assert {r.node for r in recs if r.text.startswith("[default")} == {None}


def test_hosts_a_banner_runs_on_are_known_when_no_folder_names_them(tmp_path: Path) -> None:
    # 078 archived without its node folders (renamed ``a``/``b``, or everything in one folder): the banners alone
    # name the hosts, and each stream still takes the one its banner names
    lines = (JOB_078 / "slurm-4178.out").read_text(encoding="utf-8")
    for layout in ("a", "b"), None:
        job = tmp_path / ("renamed" if layout else "flat")
        job.mkdir()
        for name in layout or ():
            (job / name).mkdir()
            (job / name / "kern.log").write_text("", encoding="utf-8")
        (job / "slurm-4178.out").write_text(lines, encoding="utf-8")
        ctx = _context(job)
        assert ctx.task_hosts["slurm-4178.out"] == {"0": "compute-alpha", "1": "compute-alpha",
                                                    "2": "compute-beta", "3": "compute-beta"}
        recs, _ = _ingest(job)
        assert {r.node for r in recs if "RuntimeError: shape mismatch" in r.text} == {"compute-beta"}


def test_what_a_banner_runs_on_must_look_like_a_machine(tmp_path: Path) -> None:
    # a word, a device, an endpoint: none is a host, so no stream is tied to it
    job = tmp_path / "job"
    job.mkdir()
    (job / "console.log").write_text("\n".join([
        "2: process 2/4 on the way", "2: rank 2 on cuda:0", "2: process 2 on gpu-0", "2: rank 2 on node-b:29500",
        "3: process 3/4 on node-b: 1 local device(s)", "3: step 1",
    ]) + "\n", encoding="utf-8")
    ctx = _context(job)
    assert ctx.task_hosts.get("console.log") == {"3": "node-b"}


def test_a_process_file_takes_the_host_its_own_banner_names(tmp_path: Path) -> None:
    # 074 (one file per JAX process, no host header) with its node folders renamed to ``part-000N``: each file's
    # own banner (``process 2/4 on cpu-node-b`` in ``process_2.log``) names its node, and the folders alias them
    src = ROOT / "fixtures" / "real_jobs" / "074-jax-sigkill"
    job = tmp_path / "job"
    for i, node in enumerate(("cpu-node-a", "cpu-node-b")):
        (job / f"part-{i + 1:04d}").mkdir(parents=True)
        for p in (src / node).glob("process_*.log"):
            (job / f"part-{i + 1:04d}" / p.name).write_bytes(p.read_bytes())
    ctx = _context(job)
    assert ctx.aliases == {"part-0001": "cpu-node-a", "part-0002": "cpu-node-b"}
    recs, _ = _ingest(job)
    assert {r.node for r in recs if r.file.endswith("process_2.log")} == {"cpu-node-b"}
    # a banner about another process (``process 3`` in process_2.log) is not the file's writer
    (job / "part-0002" / "process_2.log").write_text(BANNER.format(r=3, h="cpu-node-a")[3:] + "\n", encoding="utf-8")
    assert _context(job).node_of("part-0002/process_2.log") == "cpu-node-b"


def test_a_global_rank_the_message_states_wins_over_the_tee_prefixs_local_rank(tmp_path: Path) -> None:
    """Lightning's ``[rank: 2]`` after torchrun's ``[default0]:`` (real job 020, the second node): the local rank
    of the tee is 0, the rank the message states is the global one; a line stating none keeps the local rank."""
    node = tmp_path / "cpu-node-b"
    node.mkdir()
    lines = ["[default1]:[rank: 3] Seed set to 42", "[default0]:[rank: 2] Seed set to 42",
             "[default0]:[Rank 2] Watchdog caught collective operation timeout",
             "[default0]:2026-12-03 14:51:10,001 INFO train: step 1/20 loss 2.5",
             "[default1]:[rank: 3] Monitored metric train_loss = nan is not finite.",
             "[default0]:[rank: 2] Monitored metric train_loss = nan is not finite."]
    (node / "console.log").write_text("\n".join(lines) + "\n")
    (node / "stderr.log").write_text("[rank: 2] Monitored metric train_loss = nan is not finite.\n")
    recs, _ = _ingest(tmp_path)
    ranks = {(r.file, r.line): r.rank for r in recs}
    assert [ranks[("cpu-node-b/console.log", n)] for n in range(1, 7)] == [3, 2, 2, 0, 3, 2]
    assert ranks[("cpu-node-b/stderr.log", 1)] == 2
