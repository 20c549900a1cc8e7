"""Rule matching speed and the fixed cost of a job, each against a baseline measured in the same run.

Usage: python benchmarks/rules_speed.py [--lines N] [--repeat R] [--skip-fixed]

1. Fixed cost per job (what ``l4lite analyze`` pays whatever the job's size): importing ``l4lite.api``
   (fresh interpreters) against importing it together with scikit-learn, as when the isolation-forest module
   imported it at load; loading the rule pack (patterns compiled on first use) against loading it and compiling
   every pattern; and the CPU time of whole ``l4lite analyze`` runs against the same runs with those two eager
   costs put back (scikit-learn imported first, every pattern compiled at load).
2. The keyword gate (which rules can match a record): ``RulePack``'s combined keyword regex with its per-shape
   memo against the previous gate (one trie regex per field, then every keyword of the field tested with ``in``,
   memo on the text with digits masked), cold (a fresh pack per pass, as for each job) and warm, and both
   without any memo (the cost of a new shape). Both must agree with the gate's definition (``ReferenceGate``).
3. Full matching: the keyword-gated ``RulePack.match`` against trying every rule's regex on every record.

Inputs, measured in the same run so that the ratios do not depend on the machine:
- healthy trainer output (Megatron/DeepSpeed/HF iteration lines, NCCL INFO set-up lines, launcher and kernel
  noise), the common case every record of a job goes through;
- the lines of the real failure excerpts (fixtures/real/real-failures.jsonl), where many rules do fire;
- (gate) the record texts and messages of the simulated suite (fixtures/suite).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import resource
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import regex

from l4lite.records import Record
from l4lite.rules.keys import ReferenceGate, gate_keywords, shape
from l4lite.rules.pack import RulePack


def trie_pattern(words: Sequence[str]) -> str:
    """The former gate's trie regex (a keyword that ends where a longer one goes on ends the branch)."""
    trie: dict[str, Any] = {}
    for w in words:
        node = trie
        for ch in w:
            node = node.setdefault(ch, {})
        node[""] = {}

    def build(node: dict[str, Any]) -> str:
        if "" in node:
            return ""  # a keyword ends here: any longer keyword through this node is implied
        alts = [re.escape(ch) + build(sub) for ch, sub in sorted(node.items())]
        return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"

    return build(trie)


ROOT = Path(__file__).resolve().parent.parent
JOBS = [ROOT / "fixtures" / "jobs" / "ib-link-down", ROOT / "fixtures" / "suite" / "015-nccl_misconfig"]
_DIGITS_TO_HASH = bytes.maketrans(b"0123456789", b"##########")


def healthy_lines(n: int, seed: int = 1) -> list[str]:
    r = random.Random(seed)
    out: list[str] = []
    it = 1000
    while len(out) < n:
        it += 1
        k = r.randrange(10)
        host = f"gpu-a100-{r.randrange(1, 64):03d}"
        if k < 3:
            out.append(
                f" iteration {it:8d}/  500000 | consumed samples: {it * 512:12d} | elapsed time per iteration (ms): "
                f"{r.uniform(900, 1300):.1f} | learning rate: {r.uniform(1e-5, 3e-4):.6E} | global batch size:   512 | "
                f"lm loss: {r.uniform(1.8, 3.2):.6E} | loss scale: 1.0 | grad norm: {r.uniform(0.2, 1.5):.3f} | "
                "number of skipped iterations:   0 | number of nan iterations:   0 |")
        elif k < 5:
            a, b = r.randrange(8), r.randrange(8)
            out.append(f"{host}:{r.randrange(10**5)}:{r.randrange(10**5)} [{a}] NCCL INFO Channel {r.randrange(32):02d}/0 : "
                       f"{a}[{a}] -> {b}[{b}] via P2P/CUMEM/read")
        elif k == 5:
            out.append(f"[2024-01-09 14:22:{r.randrange(60):02d},331] [INFO] [logging.py:96:log_dist] [Rank 0] "
                       f"step={it}, skipped=5, lr=[9.8e-05], mom=[(0.9, 0.95)]")
        elif k == 6:
            out.append(f"{{'loss': {r.uniform(1, 3):.4f}, 'grad_norm': {r.uniform(0.2, 2):.4f}, "
                       f"'learning_rate': {r.uniform(1e-6, 1e-4):.3e}, 'epoch': {it / 1000:.2f}}}")
        elif k == 7:
            out.append(f"[rank{r.randrange(64)}]:[W{r.randrange(1000, 1300)} 10:11:12.345678 ProcessGroupNCCL.cpp:4000] "
                       "Warning: TORCH_NCCL_AVOID_RECORD_STREAMS is the default now, this environment variable is "
                       "thus deprecated. (function operator())")
        elif k == 8:
            out.append(f"[{r.uniform(1, 99999):.6f}] IPv6: ADDRCONF(NETDEV_CHANGE): ibp{r.randrange(300)}s0: link "
                       "becomes ready")
        else:
            out.append(f"{host}:{r.randrange(10**5)}:{r.randrange(10**5)} [{r.randrange(8)}] NCCL INFO "
                       f"ncclCommInitRank comm 0x{r.getrandbits(40):x} rank {r.randrange(64)} nranks 64 cudaDev "
                       f"{r.randrange(8)} busId {r.randrange(16**5):x} commId 0x{r.getrandbits(60):x} - Init COMPLETE")
    return out


def failure_lines() -> list[str]:
    lines: list[str] = []
    for row in (ROOT / "fixtures" / "real" / "real-failures.jsonl").read_text(encoding="utf-8").splitlines():
        lines.extend(json.loads(row)["lines"])
    return lines


def records(lines: Sequence[str]) -> list[Record]:
    return [Record("job.log", i + 1, i + 1, "node01", 0, None, "trainer", None, None, s, s)
            for i, s in enumerate(lines)]


def suite_texts() -> list[str]:
    from l4lite.ingest.reader import IngestOptions, iter_records
    from l4lite.records import Accounting

    out: list[str] = []
    for job in sorted(p for p in (ROOT / "fixtures" / "suite").iterdir() if p.is_dir()):
        for rec in iter_records([str(job)], IngestOptions(), Accounting()):
            out += [rec.message, rec.text]
    return out


class LegacyGate:
    """The previous keyword gate, kept here to measure against: a trie regex per field that only says whether
    some keyword occurs, then every keyword of that field tested with ``in``, memoised on the lower-cased
    text with digits masked to ``#``."""

    def __init__(self, rules: Sequence[Any], max_cache: int = 100_000) -> None:
        self.max_cache = max_cache
        self.always: dict[str, list[Any]] = {"message": [], "text": []}
        by_keyword: dict[str, dict[str, list[Any]]] = {"message": {}, "text": {}}
        for rule in rules:
            kws = gate_keywords(rule.keywords)
            if not kws:
                self.always[rule.match].append(rule)
            for kw in kws:
                by_keyword[rule.match].setdefault(kw, []).append(rule)
        self.order = {r.id: i for i, r in enumerate(rules)}
        self.gate: dict[str, Any] = {}
        self.kw_list: dict[str, list[tuple[str, list[Any]]]] = {}
        self.cache: dict[bytes, tuple[tuple[Any, ...], tuple[Any, ...]]] = {}
        for fld in ("message", "text"):
            kws = sorted(by_keyword[fld], key=len, reverse=True)
            self.kw_list[fld] = [(k, by_keyword[fld][k]) for k in kws]
            self.gate[fld] = re.compile(trie_pattern(kws)) if kws else None

    def lookup(self, text: str) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        low = text.lower()
        key = low.encode("utf-8", "surrogatepass").translate(_DIGITS_TO_HASH)
        found = self.cache.get(key)
        if found is None:
            found = (self.candidates(low, "message"), self.candidates(low, "text"))
            if len(self.cache) >= self.max_cache:
                self.cache.clear()
            self.cache[key] = found
        return found

    def uncached(self, text: str) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        low = text.lower()
        return (self.candidates(low, "message"), self.candidates(low, "text"))

    def candidates(self, low: str, fld: str) -> tuple[Any, ...]:
        found: list[Any] = list(self.always[fld])
        gate = self.gate[fld]
        if gate is not None and gate.search(low) is not None:
            for kw, rules in self.kw_list[fld]:
                if kw in low:
                    found.extend(rules)
        if len(found) > 1:
            found = sorted(set(found), key=lambda r: self.order[r.id])
        return tuple(found)


def best_of(fn: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def gate_rows(pack: RulePack, texts: list[str], repeat: int) -> dict[str, tuple[float, float, int]]:
    """(previous gate seconds, gate seconds, texts) for a cold memo, a warm memo and no memo at all."""

    def cold_new() -> None:
        lookup = RulePack(pack.rules)._lookup
        for t in texts:
            lookup(t)

    def cold_old() -> None:
        lookup = LegacyGate(pack.rules).lookup
        for t in texts:
            lookup(t)

    warm_new, warm_old = RulePack(pack.rules)._lookup, LegacyGate(pack.rules).lookup
    for t in texts:
        warm_new(t)
        warm_old(t)
    legacy, fresh = LegacyGate(pack.rules), RulePack(pack.rules)
    distinct = list(dict.fromkeys(texts))
    keys = [shape(t) for t in distinct]
    return {
        "cold": (best_of(cold_old, repeat), best_of(cold_new, repeat), len(texts)),
        "warm": (best_of(lambda: [warm_old(t) for t in texts], repeat),
                 best_of(lambda: [warm_new(t) for t in texts], repeat), len(texts)),
        "no memo": (best_of(lambda: [legacy.uncached(t) for t in distinct], repeat),
                    best_of(lambda: [fresh._candidates(k) for k in keys], repeat), len(distinct)),
    }


def gate_speed(pack: RulePack, inputs: dict[str, list[str]], repeat: int) -> None:
    reference = ReferenceGate(pack.rules)

    def ids(found: tuple[tuple[Any, ...], tuple[Any, ...]]) -> tuple[list[str], list[str]]:
        return [r.id for r in found[0]], [r.id for r in found[1]]

    print("\nkeyword gate (which rules can match a text), per text; the previous gate is the baseline")
    for name, texts in inputs.items():
        legacy, fresh = LegacyGate(pack.rules), RulePack(pack.rules)
        for text in texts[:: max(1, len(texts) // 5000)]:
            want = ids(reference.candidates(text))
            if ids(fresh._lookup(text)) != want or ids(legacy.lookup(text)) != want:
                raise SystemExit(f"a gate disagrees with its definition on: {text[:200]!r}")
        print(f"  {name}: {len(texts):,} texts, {len({shape(t) for t in texts}):,} shapes")
        for label, (old, new, n) in gate_rows(pack, texts, repeat).items():
            print(f"    {label:8s} previous {old / n * 1e6:7.2f} us  now {new / n * 1e6:7.2f} us   "
                  f"speed-up {old / new:5.2f}x")


def child_cpu(code: str, repeat: int) -> tuple[float, str]:
    """Least CPU time (user + system) of ``repeat`` fresh interpreters running ``code``, and what it printed."""
    best, out = float("inf"), ""
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        done = subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, capture_output=True, text=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        best = min(best, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        out = done.stdout.strip()
    return best, out


EAGER = """
import sklearn.ensemble
from l4lite.rules import pack as rulepack
_load = rulepack.RulePack.load.__func__
def load(cls, *a, **k):
    pack = _load(cls, *a, **k)
    for rule in pack.rules:
        rule.compiled
    return pack
rulepack.RulePack.load = classmethod(load)
"""


def fixed_cost(repeat: int) -> None:
    from l4lite import api as pipeline

    print(f"fixed cost per job (CPU seconds, best of {repeat}; the former eager costs are the baseline)")
    base = child_cpu("pass", repeat)[0]
    now = child_cpu("import l4lite.api", repeat)[0] - base
    old = child_cpu("import l4lite.api, sklearn.ensemble", repeat)[0] - base
    print(f"  import l4lite.api   now {now:6.3f} s   with scikit-learn  {old:6.3f} s   saved {old - now:6.3f} s")

    def load(eager: bool) -> float:
        regex.purge()
        re.purge()
        t0 = time.process_time()
        pack = RulePack.load()
        if eager:
            for rule in pack.rules:
                _ = rule.compiled
        return time.process_time() - t0

    lazy = min(load(False) for _ in range(repeat))
    eager = min(load(True) for _ in range(repeat))
    print(f"  load the rule pack       now {lazy:6.3f} s   compiling all      {eager:6.3f} s   saved {eager - lazy:6.3f} s")
    for job in JOBS:
        rel = str(job.relative_to(ROOT))
        run = (f"import sys\nfrom l4lite.cli.main import main\nmain(['analyze', {rel!r}, '--no-store', '--quiet'])\n"
               "print('sklearn' in sys.modules)\n")
        now, fitted = child_cpu(run, repeat)
        old = child_cpu(EAGER + run, repeat)[0]
        pack = RulePack.load()
        pipeline.scan_job([str(job)], pipeline.AnalyzeOptions(), rules=pack)
        used = sum("compiled" in r.__dict__ for r in pack.rules)
        print(f"  analyze {rel}: now {now:6.3f} s, eager {old:6.3f} s, saved {old - now:6.3f} s "
              f"({1 - now / old:4.0%}); {used} of {len(pack)} patterns compiled; "
              + ("a forest was fitted (scikit-learn imported)" if fitted == "True" else "no forest fitted"))


def naive_matcher(pack: RulePack) -> Callable[[Record], list[str]]:
    """Every rule's regex on its field for every record (the fallback rules handled the same way)."""
    rules = list(pack.rules)

    def match(rec: Record) -> list[str]:
        hits: list[str] = []
        fallbacks = []
        for r in rules:
            value = rec.message if r.match == "message" else rec.text
            if r.compiled.search(value):
                (fallbacks if r.fallback else hits).append(r)
        if hits or not fallbacks:
            return sorted(r.id for r in hits)  # type: ignore[attr-defined]
        return [max(fallbacks, key=lambda r: r.priority).id]

    return match


def rate(fn: Callable[[Record], object], recs: Sequence[Record], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for rec in recs:
            fn(rec)
        best = min(best, time.perf_counter() - t0)
    return len(recs) / best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--lines", type=int, default=100_000, help="healthy lines to generate")
    ap.add_argument("--repeat", type=int, default=3, help="timing repetitions (best is kept)")
    ap.add_argument("--skip-fixed", action="store_true", help="skip the fixed-cost measurements (subprocesses)")
    args = ap.parse_args()
    if not args.skip_fixed:
        fixed_cost(args.repeat)
    pack = RulePack.load()
    healthy, failures = healthy_lines(args.lines), failure_lines()
    gate_speed(pack, {"healthy trainer lines": healthy, "real failure excerpt lines": failures * 40,
                      "suite records (message, text)": suite_texts()}, args.repeat)
    naive = naive_matcher(pack)
    fast = lambda rec: sorted(m.rule.id for m in pack.match(rec))  # noqa: E731
    inputs = {
        "healthy trainer lines": records(healthy),
        "real failure excerpt lines": records(failures * 40),
    }
    print(f"\nrule pack: {len(pack)} rules, {sum(r.match == 'text' for r in pack.rules)} on record text")
    for name, recs in inputs.items():
        sample = recs[:: max(1, len(recs) // 5000)]
        mismatch = [r.message for r in sample if fast(r) != naive(r)]
        if mismatch:
            raise SystemExit(f"prefilter and naive matching disagree on: {mismatch[0][:200]!r}")
        hits = sum(1 for r in sample if fast(r))
        f = rate(fast, recs, args.repeat)
        n = rate(naive, recs[:20_000], max(1, args.repeat - 1))  # about 2,000 lines/s: a sample gives the rate
        print(f"{name:28s} {len(recs):8d} records, {hits / len(sample):6.1%} matched | "
              f"prefiltered {f:12,.0f} lines/s | every regex {n:10,.0f} lines/s | ratio {f / n:6.1f}x")


if __name__ == "__main__":
    main()
