"""Template mining: masking on real lines, stable ids, state round trip, fast path equal to the plain path."""

from __future__ import annotations

import csv
import gzip
import io
import json
import random
import re
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from l4lite.errors import L4Error
from l4lite.mining.miner import Masker, TemplateMiner, mask, template_id
from l4lite.records import Record

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def _real_lines() -> list[str]:
    lines = []
    with (FIXTURES / "real" / "real-failures.jsonl").open(encoding="utf-8") as fh:
        for row in fh:
            lines.extend(json.loads(row)["lines"])
    return lines


def _loghub() -> dict[str, list[tuple[str, str]]]:
    data = gzip.decompress((FIXTURES / "loghub" / "loghub2k_corrected.csv.gz").read_bytes()).decode("utf-8")
    out: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for row in csv.DictReader(io.StringIO(data)):
        out[row["System"]].append((row["Content"], row["EventTemplate"]))
    return out


REAL = _real_lines()
LOGHUB = _loghub()
ALL_LOGHUB = [content for rows in LOGHUB.values() for content, _ in rows]


def _real(fragment: str) -> str:
    return next(line for line in REAL if fragment in line)


# -- masking -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fragment", "expected"),
    [
        (
            "NVRM: Xid (PCI:0019:01:00): 149",
            "NVRM: Xid (PCI:<PCI>): <NUM>, NETIR Fatal XC0 i0 Link <NUM> (<HEX> <HEX> <HEX>)",
        ),
        ("Connect to 10.148.3.247<56821>", "include/socket.h:<NUM> NCCL WARN Connect to <IP> failed"),
        ("remote peer ng30903-ib.narval.calcul.quebec", "by remote peer <HOST>"),
        ("localGid fd00:1148:9000:5000:4:200:3:ff22", "(Recv) localGid <IP> remoteGids"),
        ("fe80::966d:ae03:8b:df78%ib0<53249>", "NET/IB : Got completion from peer <IP> with error <NUM>"),
        ('dataloader.py", line 986', 'File "<PATH>", line <NUM>, in _try_get_data'),
        ("frame #0: c10::Error::Error", "+ <HEX> (<HEX> in <PATH>)"),
        ("Team Handle:99c9f23d49236386", "Team Handle:<HASH> Flags:<NUM>"),
        ("ran for 600061 milliseconds", "Timeout(ms)=<NUM>) ran for <NUM> milliseconds before timing out."),
        (
            "Tried to allocate 3.39 GiB",
            "Tried to allocate <NUM> GiB. GPU <NUM> has a total capacity of <NUM> GiB",
        ),
        ("exitcode  : -9 (pid: 14750)", "exitcode : <NUM> (pid: <NUM>)"),
        (
            "NCCL INFO Channel 21/0 : 1[101d0]",
            "NCCL INFO Channel <NUM>/<NUM> : <NUM>[101d0] -> <NUM>[101c0] via P2P/IPC/read",
        ),
    ],
)
def test_mask_real_lines(fragment: str, expected: str) -> None:
    assert expected in mask(_real(fragment))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("uuid req-38101a0b-2096-447d-96ea-a692162415ae done", "uuid req-<UUID> done"),
        ("mlx5_core 0000:cb:00.0 enp1s0: Link down", "mlx5_core <PCI> enp1s0: Link down"),
        ("step took 12.5s and 300ms", "step took <DUR> and <DUR>"),
        (
            "allocated 0.26GB on node017:29500 via gpu-a100-017",
            "allocated <SIZE> on <HOST> via gpu-a100-<NUM>",
        ),
        ("saved /ckpt/global_step100/model.pt at 2025-01-21T04:41:44,283302+00:00", "saved <PATH> at <TIME>"),
        ("see https://example.com/a?b=1 now", "see <URL> now"),
        (
            "python3.8 v1.2.3 x86_64 R02-M1-N0 torch.distributed.elastic",
            "python3.8 v1.2.3 x86_<NUM> R02-M1-N0 torch.distributed.elastic",
        ),
        ("generating core.3613", "generating core.<NUM>"),
        ("delete blk_1 blk_-2   blk_3", "delete blk_<NUM>"),
        ("failed to resolve name an14 an15 an16 an142", "failed to resolve name an<NUM>"),
        ("GPU0 GPU1 GPU2 GPU3 CPU Affinity", "GPU<NUM> CPU Affinity"),
        ("GPU0 GPU1 are peers", "GPU0 GPU1 are peers"),  # two names are not a list
        ("sda1 sdb1 sdc1 mounted", "sda1 sdb1 sdc1 mounted"),  # names of different stems
        ("  spaced\tout  ", "spaced out"),
        ("", ""),
    ],
)
def test_mask_examples(text: str, expected: str) -> None:
    assert mask(text) == expected


def test_cached_masker_equals_plain_masking() -> None:
    masker = Masker(cache_size=64)  # small: the bounded caches clear many times
    for line in REAL + ALL_LOGHUB:
        assert masker(line) == mask(line) == masker.mask_plain(line)
    assert len(masker._cache) <= 64 and len(masker._folded) <= 64


_FOLD = str.maketrans("123456789", "000000000")
_token_chars = st.sampled_from(
    list("0123456789abcdefxX.:-_/<>%=,()[]{}\"'~GBiKMs") + ["node", "ms", "0x", "ffff"]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(_token_chars, min_size=1, max_size=12).map("".join), max_size=6), st.randoms())
def test_masking_never_tells_digits_apart(tokens: list[str], rnd: random.Random) -> None:
    """The fast path's premise: changing digits changes at most the digits masking keeps."""
    message = " ".join(tokens)
    other = re.sub(r"[0-9]", lambda _: str(rnd.randrange(10)), message)
    assert mask(message).translate(_FOLD) == mask(other).translate(_FOLD)
    assert Masker()(message) == mask(message)


# -- ids and mining ------------------------------------------------------------------------------------


def test_template_id_is_a_stable_hash_of_the_text() -> None:
    assert template_id("a <NUM> b") == template_id("a <NUM> b")
    assert template_id("a <NUM> b") != template_id("a <NUM> c")
    assert re.fullmatch(r"T[0-9a-f]{16}", template_id("x"))
    assert (
        template_id("NCCL WARN Connect to <IP> failed")
        == "T" + __import__("hashlib").blake2b(b"NCCL WARN Connect to <IP> failed", digest_size=8).hexdigest()
    )


def _synthetic(n: int, seed: int) -> list[str]:
    rnd = random.Random(seed)
    forms = [
        "NCCL WARN Connect to 10.{}.{}.{}<{}> failed : Connection refused",
        "iteration {} / 1000 | lm loss: {}.{} | grad norm: {}.{}",
        "Watchdog caught collective operation timeout: WorkNCCL(SeqNum={}) ran for {} milliseconds",
        "NVRM: Xid (PCI:0000:{}:00.0): 79, pid={}, GPU has fallen off the bus.",
        "Saving checkpoint to /ckpt/step{}/model_{}.pt",
        "mlx5_core 0000:{}:00.0: port {} link down",
    ]
    out = []
    for _ in range(n):
        form = rnd.choice(forms)
        out.append(form.format(*(rnd.randrange(1, 99) for _ in range(form.count("{}")))))
    return out


def _ids(miner: TemplateMiner, lines: list[str]) -> list[str]:
    local = [miner.add(line) for line in lines]
    table = miner.finalize()
    return [table[c][0] for c in local]


def test_stable_ids_across_miners_and_orders() -> None:
    lines = _synthetic(600, seed=1)
    forward = _ids(TemplateMiner(), lines)
    backward = _ids(TemplateMiner(), lines[::-1])[::-1]
    assert forward == backward
    assert len(set(forward)) == 6
    connect = next(i for i, line in enumerate(lines) if line.startswith("NCCL WARN Connect"))
    assert forward[connect] == template_id("NCCL WARN Connect to <IP> failed : Connection refused")


def test_fast_path_equals_plain_path_on_real_lines() -> None:
    lines = REAL + ALL_LOGHUB
    lines = lines + lines[::3]  # repeats: the caches answer these
    fast = TemplateMiner()
    plain = TemplateMiner(cache_size=0)
    fast_local = [fast.add(line) for line in lines]
    plain_local = [plain.add(line) for line in lines]
    assert fast_local == plain_local
    assert fast.finalize() == plain.finalize()
    assert fast.hits > len(lines) // 3
    assert fast.drain_calls < plain.drain_calls
    sizes = Counter(fast_local)
    assert all(fast.drain.id_to_cluster[c].size == n for c, n in sizes.items())


def test_fast_path_equals_plain_path_with_tiny_caches_and_varying_digits() -> None:
    rnd = random.Random(7)
    lines = [re.sub(r"\d", lambda _: str(rnd.randrange(10)), line) for line in REAL * 3]
    fast = TemplateMiner(cache_size=16)
    plain = TemplateMiner(cache_size=0)
    assert [fast.add(line) for line in lines] == [plain.add(line) for line in lines]
    assert fast.finalize() == plain.finalize()
    assert len(fast._by_key) <= 16 and len(fast._by_masked) <= 16


def test_cached_answers_expire_when_a_cluster_of_that_length_changes() -> None:
    """Plain Drain moves a repeated message to a newer, closer cluster; the fast path must follow."""
    lines = ["alpha bravo charlie delta", "alpha xray yankee delta", "alpha bravo charlie zulu"]
    lines.append(lines[0])
    plain = TemplateMiner(cache_size=0)
    expected = [plain.add(line) for line in lines]
    assert expected[3] != expected[0]  # the premise: Drain itself changes its answer
    fast = TemplateMiner()
    assert [fast.add(line) for line in lines] == expected
    assert fast.finalize() == plain.finalize()


def test_lists_of_names_give_the_plain_path_clusters() -> None:
    """A list of names masks as one ``stem<NUM>``; names that keep their digits elsewhere in a message are
    compared one by one, even where the kept ones would read as a list on their own."""
    rnd = random.Random(3)
    shapes = ["nodes an{} an{} an{} are down", "x an{} y an{} z an{}", "nodes an{} an{} an{} an{} are down",
              "x an{} y an{} z an{} w"]
    lines = [shape.format(*(rnd.randrange(1, 300) for _ in range(4))) for _ in range(40) for shape in shapes]
    fast = TemplateMiner(sim_th=0.9, cache_size=8)
    plain = TemplateMiner(sim_th=0.9, cache_size=0)
    assert [fast.add(line) for line in lines] == [plain.add(line) for line in lines]
    assert fast.finalize() == plain.finalize()
    assert "nodes an<NUM> are down" in {text for _, text in fast.finalize().values()}


def test_kept_digits_are_checked_on_a_cache_hit() -> None:
    miner = TemplateMiner(sim_th=0.9)
    a = miner.add("module python3.8 failed to load xyz")
    b = miner.add("module python2.7 failed to load xyz")  # same folded form, different kept digits
    plain = TemplateMiner(sim_th=0.9, cache_size=0)
    assert [a, b] == [
        plain.add("module python3.8 failed to load xyz"),
        plain.add("module python2.7 failed to load xyz"),
    ]
    assert miner.finalize() == plain.finalize()


def test_state_round_trip_continues_exactly() -> None:
    lines = REAL + [c for c, _ in LOGHUB["HDFS"][:500]] + [c for c, _ in LOGHUB["BGL"][:500]]
    half = len(lines) // 2
    whole = TemplateMiner()
    whole_ids = [whole.add(line) for line in lines]
    first = TemplateMiner()
    first_ids = [first.add(line) for line in lines[:half]]
    state = json.loads(json.dumps(first.to_state()))
    resumed = TemplateMiner.from_state(state)
    assert resumed.finalize() == first.finalize()
    resumed_ids = [resumed.add(line) for line in lines[half:]]
    assert first_ids + resumed_ids == whole_ids
    assert resumed.finalize() == whole.finalize()
    assert resumed.to_state() == whole.to_state()


def test_state_without_tree_is_rebuilt_by_re_adding_clusters() -> None:
    miner = TemplateMiner()
    lines = _synthetic(200, seed=3)
    for line in lines:
        miner.add(line)
    state = miner.to_state()
    del state["tree"]
    rebuilt = TemplateMiner.from_state(state)
    assert rebuilt.finalize() == miner.finalize()
    before = len(rebuilt)
    table = rebuilt.finalize()
    assert {table[rebuilt.add(line)][0] for line in lines} == {tid for tid, _ in miner.finalize().values()}
    assert len(rebuilt) == before


@pytest.mark.parametrize(
    "state",
    [
        {"version": 99},
        {"version": 1},
        {"version": 1, "params": {"sim_th": 0.5}},
        {
            "version": 1,
            "params": {"sim_th": 0.5, "depth": 4, "max_children": 100},
            "clusters": [["x", 1, []]],
        },
    ],
)
def test_invalid_state_raises_l4error(state: dict) -> None:
    with pytest.raises(L4Error):
        TemplateMiner.from_state(state)


def test_invalid_parameters_raise_l4error() -> None:
    with pytest.raises(L4Error):
        TemplateMiner(sim_th=1.5)
    with pytest.raises(L4Error):
        TemplateMiner(depth=2)


def test_assign_fills_template_fields() -> None:
    records = [
        Record("f.log", i + 1, i + 1, "node1", None, None, "nccl", None, None, line, line)
        for i, line in enumerate(_synthetic(50, seed=5))
    ]
    miner = TemplateMiner()
    out = list(miner.assign(records))
    assert out == records
    assert all(r.template_id == template_id(r.template) and r.template for r in out)
    assert miner.template(miner.add(records[0].message)) == records[0].template


def _grouping_accuracy(truth: list[str], predicted: list[str]) -> float:
    size = Counter(truth)
    groups: dict[str, list[int]] = defaultdict(list)
    for i, p in enumerate(predicted):
        groups[p].append(i)
    correct = 0
    for members in groups.values():
        labels = {truth[i] for i in members}
        if len(labels) == 1 and size[labels.pop()] == len(members):
            correct += len(members)
    return correct / len(truth)


@pytest.mark.parametrize(
    ("system", "minimum"), [("HDFS", 0.99), ("BGL", 0.95), ("HPC", 0.9), ("Thunderbird", 0.95)]
)
def test_grouping_accuracy_on_loghub_samples(system: str, minimum: float) -> None:
    rows = LOGHUB[system]
    predicted = _ids(TemplateMiner(), [content for content, _ in rows])
    assert _grouping_accuracy([t for _, t in rows], predicted) >= minimum


def _kept_token_lines(rnd: random.Random, n: int) -> list[str]:
    """Kernel and Lustre lines whose kept tokens (digits that masking keeps) change on every line, mixed with
    near-twins that make more than one cluster share a leaf of Drain's tree (a word where the others vary)."""
    pool = ["1f000", "adc97", "2b", "x1"]
    out = []
    for _ in range(n):
        k = rnd.randrange(6)
        a, b = rnd.choice(pool), rnd.choice(pool)
        if k == 0:
            out.append(f"python[{rnd.randrange(10**6)}]: segfault at {rnd.getrandbits(44):x} ip "
                       f"{rnd.getrandbits(47):016x} error 4 in libc.so.6[{rnd.getrandbits(20):x}+{a}]")
        elif k == 1:
            out.append(f"python[{rnd.randrange(10**6)}]: segfault at {rnd.getrandbits(44):x} ip "
                       f"{rnd.getrandbits(47):016x} error 4 in libc.so.6[{a}+{b}]")
        elif k == 2:
            out.append(f"Lustre: {rnd.randrange(1000, 99999)}:0:(client.c:2001:ptlrpc_expire_one_request()) @@@ "
                       f"req@{rnd.getrandbits(48):016x} x{rnd.getrandbits(50)}/t0(0) o400->OST{a}@o2ib rc 0/-1")
        elif k == 3:
            out.append(f"Lustre: {rnd.randrange(1000, 99999)}:0:(client.c:2001:ptlrpc_expire_one_request()) @@@ "
                       f"req@{rnd.getrandbits(48):016x} x1/t0(0) o400->OST{a}@o2ib rc 0/-1")
        elif k == 4:
            out.append(f"CPU{rnd.randrange(96)}: Core temperature above threshold, cpu clock throttled "
                       f"(total events = {rnd.randrange(10**5)})")
        else:
            out.append(f"x{rnd.choice(pool)}/t0(0) o400->OST{b}@o2ib rc 0/-1 {a}")
    return out


@pytest.mark.parametrize("sim_th,cache_size,seed", [(0.5, 100_000, 1), (0.7, 16, 2), (0.9, 100_000, 3),
                                                    (0.9, 64, 4), (0.4, 100_000, 5)])
def test_fast_path_equals_plain_path_when_kept_tokens_change_on_every_line(sim_th: float, cache_size: int,
                                                                           seed: int) -> None:
    """A kept token that is new on each line is answered without masking or Drain only where the cluster has a
    wildcard there and no other cluster of its leaf has a word: the clusters are those of plain Drain."""
    lines = _kept_token_lines(random.Random(seed), 3000)
    fast = TemplateMiner(sim_th=sim_th, cache_size=cache_size)
    plain = TemplateMiner(sim_th=sim_th, cache_size=0)
    assert [fast.add(line) for line in lines] == [plain.add(line) for line in lines]
    assert fast.finalize() == plain.finalize()
    assert {c.cluster_id: c.size for c in fast.drain.clusters} == {c.cluster_id: c.size for c in plain.drain.clusters}


def test_a_kept_token_new_on_every_line_needs_drain_only_at_first() -> None:
    rnd = random.Random(11)
    lines = [f"python[{rnd.randrange(10**6)}]: segfault at {rnd.getrandbits(44):x} error 4 in "
             f"libc.so.6[{rnd.getrandbits(44):x}+{rnd.getrandbits(20):x}]" for _ in range(2000)]
    lines += [f"Lustre: {rnd.randrange(1000, 99999)}:0:(client.c:2001:ptlrpc_expire_one_request()) "
              f"req@{rnd.getrandbits(48):016x} x{rnd.getrandbits(50)}/t0(0) o400" for _ in range(2000)]
    fast = TemplateMiner()
    plain = TemplateMiner(cache_size=0)
    assert [fast.add(line) for line in lines] == [plain.add(line) for line in lines]
    assert len(fast) == 2
    assert fast.drain_calls < 100  # was one per line whose kept token was new: nearly all of them


def test_tokens_that_keep_digits_are_masked_by_their_folded_form() -> None:
    """A masked token with digits left (``<IP>@o2ib``, ``x<NUM>/t0(<NUM>)``) is spliced from the spans of its
    digit-folded form after the first one: the same text as masking it afresh, for every value."""
    rnd = random.Random(5)
    forms = ["{}.{}.{}.{}@o2ib", "x{}/t{}({})", "mlx5_{}:", "CPU{}:", "sd{}b{}", "OST{}-osc@{}.0.0.{}@o2ib:{}/{}",
             "python3.{}", "{}ms/{}x", "v{}.{}", "0x{}g{}", "a{}:{}"]
    masker = Masker(cache_size=64)
    for _ in range(3000):
        token = rnd.choice(forms).format(*(rnd.randrange(10 ** rnd.randrange(1, 5)) for _ in range(5)))
        assert masker.mask_list([token])[0] == [mask(token)]
    assert masker._spans  # the premise: spans were learnt and used
    assert len(masker._spans) <= 64


def test_tokens_with_new_hex_ids_are_masked_by_their_hex_folded_form() -> None:
    """Tokens whose hex ids change on every line share the entry of their ``hex_key`` (``<HASH>``), in every
    context where masking tells a hex word apart (a path, after a digit and a dot, an exponent, upper case)."""
    rnd = random.Random(6)

    def hx(k: int) -> str:
        return "".join(rnd.choice("0123456789abcdef") for _ in range(k))

    forms = ["{}", "libc.so.6[{}+{}]", "/{}", "1.{}", "GPU-{}", "req@{}", "({})", "{}.cluster.local", "e{}",
             "0x{}", "{}:{}", "x{}/t0(0)"]
    masker = Masker(cache_size=4096)
    for _ in range(4000):
        k = rnd.choice([3, 8, 11, 16])
        word = rnd.choice([hx(k), hx(k).upper(), "1" * (k - 1) + "e12", str(rnd.randrange(10 ** k))])
        token = rnd.choice(forms).format(word, hx(rnd.randrange(1, 9)))
        assert masker.mask_list([token])[0] == [mask(token)], token
    assert len(masker._folded) < 1000  # one entry per hex-folded form, not one per id


def test_a_fixed_kept_token_with_a_new_value_of_the_same_masked_text_needs_no_masking_of_the_rest() -> None:
    """Lustre lines whose node (kept: ``<IP>@o2ib``) and target id (kept, where the cluster has a wildcard)
    change on every line: the node's masked text is compared, so the lines take the cached answer without
    masking the tuple of kept tokens (one entry per line before), and the clusters are plain Drain's."""
    rnd = random.Random(8)
    lines = [f"LustreError: 11-0: scratch-OST{rnd.getrandbits(12):04x}-osc-ffff{rnd.getrandbits(32):08x}: operation "
             f"ost_connect to node 10.0.{rnd.randrange(256)}.{rnd.randrange(256)}@o2ib failed: rc = -19"
             for _ in range(2000)]
    fast = TemplateMiner()
    plain = TemplateMiner(cache_size=0)
    assert [fast.add(line) for line in lines] == [plain.add(line) for line in lines]
    assert fast.finalize() == plain.finalize()
    assert len(fast._kept_masked) < 20
