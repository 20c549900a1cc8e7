"""Shards of a job and the merge of their scans (see ``l4lite.scale.engine`` for where shards run).

A shard is a contiguous run of the job's files in discovery order, a large plain file being first cut into pieces
at record starts (``l4lite.ingest.pieces``; a piece counts as a file here). ``scan_shard`` scans one shard as
``pipeline.scan_files`` would; ``merge_results`` merges two neighbouring shard results, associatively, so that
results can merge in any tree of neighbours; ``finish_merge`` turns the merged result into the job's scan:

- templates merge by their text, through the stable template id (a hash of the text), after the shards'
  template texts are re-mined with one Drain (``unify_templates``): a shard that saw one value of a field keeps
  it literal where the whole job's pass generalised it to ``<*>``;
- counts per (node, time bucket, template) add up;
- rank -> node ties merge with their weights, in shard order, *before* rank-only node keys (``rank:N``) are
  resolved, so that a rank printed alone in one file gets the node that a NCCL line of another file ties it to;
- what one pass keeps in file order (a node's first and last time, its training progress, the first exemplar
  records) is kept in file order, not by time.
"""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from l4lite.ingest.attribution import RankMap
from l4lite.ingest.context import JobContext
from l4lite.ingest.files import InputFile
from l4lite.ingest.pieces import share_weights, split_large
from l4lite.records import Accounting, RotatedStreams

if TYPE_CHECKING:  # the scan is imported where shards are scanned or merged: `parse --jobs N` plans without it
    from l4lite.scan.scanner import JobScan, Progress


# ---------------------------------------------------------------------------------------------- shard plan
@dataclass(frozen=True)
class ShardTask:
    """What a worker needs to scan one shard: plain, picklable data."""

    index: int
    files: tuple[InputFile, ...]
    root: str
    context: JobContext
    rules_files: tuple[str, ...]
    bucket_seconds: float
    steps_per_epoch: float | None = None

    @property
    def size(self) -> int:
        return sum(f.size for f in self.files)


@dataclass
class ShardResult:
    """A shard's scan with what merging needs beyond it: the weighted rank ties and the scan's own
    first-seen rank -> node map (``JobScan.merge`` keeps only the last)."""

    index: int
    scan: JobScan
    ties: RankMap = field(default_factory=RankMap)
    first_rank_nodes: dict[int, str] = field(default_factory=dict)
    exemplars: dict[tuple[str, str], list[Any]] = field(default_factory=dict)
    records: int = 0
    bytes: int = 0
    seconds: float = 0.0
    phase_end: dict[str, str] = field(default_factory=dict)  # node -> the phase its last marker or metric implied


SHARD_ROUNDS = (2, 1)  # relative sizes of a job's shards: a round of one shard per worker for each
# The smallest shard a later round is cut into for ``analyze``: each shard learns the line shapes, plans, rule
# gates and templates of its lines anew (0.3-0.7 s of CPU on the zoo's 31 MB storage job, where a 5 MB shard
# reads in 0.7 s), so a round of shards smaller than this costs more than it balances (docs/performance.md).
ROUND_MIN_BYTES = 16 << 20


def job_rounds(total: int, workers: int, min_round_bytes: int = 0) -> tuple[int, ...]:
    """The rounds of ``SHARD_ROUNDS`` a job of ``total`` bytes is cut into: the later rounds are dropped, last
    first, while a shard of the last round would hold less than ``min_round_bytes`` (the first round stays)."""
    for n in range(len(SHARD_ROUNDS), 1, -1):
        rounds = SHARD_ROUNDS[:n]
        if total * rounds[-1] / (sum(rounds) * max(1, workers)) >= min_round_bytes:
            return rounds
    return SHARD_ROUNDS[:1]


def job_shards(files: Sequence[InputFile], workers: int, min_round_bytes: int = 0) -> list[list[InputFile]]:
    """The shards of a job for ``workers`` processes: rounds of one shard per worker, each round smaller than
    the one before (``SHARD_ROUNDS``). A worker takes the next shard when it is free, so the job ends with small
    shards: a worker that a busy machine slows down, or that drew the costlier lines, leaves the others idle
    for part of a small shard, not of a large one. Two rounds keep to two shards per worker: each shard costs
    something of its own (learning the line shapes, sending its scan back, merging it), which is why a small job
    keeps only the rounds whose shards hold ``min_round_bytes`` or more (``job_rounds``). Large files are cut
    into pieces for this (``pieces.split_large``), and the neighbouring pieces that fall in one shard are
    joined again, so that a shard reads each file's lead once."""
    files = [replace(f, size=read_size(f)) for f in files]
    rounds = job_rounds(sum(f.size for f in files), workers, min_round_bytes)
    weights = [w for w in rounds for _ in range(max(1, workers))]
    shards = even_ends(plan_shards(split_large(files, weights), weights), weights, max(1, workers))
    return [_joined_pieces(shard) for shard in shards]


def makespan(sizes: Sequence[int], workers: int) -> int:
    """When the last of ``workers`` equal workers ends, each taking the next shard (in order) as it is free."""
    free = [0] * max(1, workers)
    for size in sizes:
        i = free.index(min(free))
        free[i] += size
    return max(free)


def even_ends(shards: list[list[InputFile]], weights: Sequence[float], workers: int,
              max_moves: int = 64) -> list[list[InputFile]]:
    """``shards`` with their borders moved file by file while that makes the workers end sooner together.

    ``plan_shards`` gives each shard its share in whole files, each rounded on its own: a job of 16 equal files
    in shares of 2, 2, 1, 1 got 5, 6, 2 and 3 files, so one worker took 9 files and the other 7, and the job
    ended a ninth later than it could (5, 5, 3, 3 ends both at 8). A border moves only where that lowers the
    time the last worker ends (``makespan``), or keeps it and brings the shards nearer their shares."""
    flat = [f for shard in shards for f in shard]
    if len(shards) < 2 or len(flat) <= len(shards):
        return shards
    size = [max(f.size, 1) for f in flat]
    prefix = list(itertools.accumulate(size, initial=0))
    unit = prefix[-1] / (sum(weights[:len(shards)]) or 1)
    targets = [unit * w for w in weights[:len(shards)]]

    def cost(cuts: list[int]) -> tuple[int, float]:
        bounds = [0, *cuts, len(flat)]
        sizes = [prefix[b] - prefix[a] for a, b in itertools.pairwise(bounds)]
        return makespan(sizes, workers), sum((s - t) ** 2 for s, t in zip(sizes, targets, strict=False))

    cuts = list(itertools.accumulate(len(s) for s in shards[:-1]))
    best = cost(cuts)
    for _ in range(max_moves):
        moved = False
        for i in range(len(cuts)):
            for step in (-1, 1):
                c = cuts[i] + step
                if c <= (cuts[i - 1] if i else 0) or c >= (cuts[i + 1] if i + 1 < len(cuts) else len(flat)):
                    continue
                trial = [*cuts[:i], c, *cuts[i + 1:]]
                got = cost(trial)
                if got < best:
                    cuts, best, moved = trial, got, True
        if not moved:
            break
    bounds = [0, *cuts, len(flat)]
    return [flat[a:b] for a, b in itertools.pairwise(bounds)]


def read_size(f: InputFile) -> int:
    """The bytes a shard reads from a file: a gzip file's uncompressed size, from its footer (ISIZE, the
    size modulo 4 GiB of its last member), not its size on disk. Rotated ``.gz`` logs hold five to ten times
    their size in lines; weighed on disk, the shard that holds them took that much more than its share."""
    if not f.compressed or f.is_stdin:
        return f.size
    try:
        with open(f.path, "rb") as fh:
            fh.seek(-4, os.SEEK_END)
            isize = int.from_bytes(fh.read(4), "little")
    except OSError:
        return f.size
    return max(f.size, isize)


def plan_shards(files: Sequence[InputFile], parts: int | Sequence[float]) -> list[list[InputFile]]:
    """Split files (kept in order) into at most ``parts`` contiguous runs of roughly equal size, or of sizes in
    the proportions of ``parts`` when it is a list of weights. A file goes to the run that holds the larger
    share of it."""
    files = list(files)
    weights = share_weights(parts)
    if not files:
        return []
    count = max(1, min(len(weights), len(files)))
    total = sum(max(f.size, 1) for f in files)
    unit = total / (sum(weights[:count]) or count)
    ends = [unit * w for w in itertools.accumulate(weights[:count])]  # where each run should end, in bytes
    shards: list[list[InputFile]] = [[]]
    acc = 0.0
    for i, f in enumerate(files):
        size = max(f.size, 1)
        remaining_files = len(files) - i
        remaining_shards = count - len(shards)
        if shards[-1] and (acc + size / 2 > ends[len(shards) - 1] or remaining_files <= remaining_shards) \
                and len(shards) < count:
            shards.append([])
        shards[-1].append(f)
        acc += size
    return shards


def _joined_pieces(files: list[InputFile]) -> list[InputFile]:
    """``files`` with each run of neighbouring pieces of one file made one piece."""
    out: list[InputFile] = []
    for f in files:
        last = out[-1] if out else None
        if last is not None and last.is_piece and f.is_piece and last.path == f.path and last.stop == f.start:
            out[-1] = replace(last, size=last.size + f.size, stop=f.stop)
        else:
            out.append(f)
    return out


def _rules(rules_files: tuple[str, ...]) -> Any:
    """A fresh rule pack for one shard: the rules loaded once per process (a forked worker has the parent's), with
    the shard's own timeout counters and warnings."""
    from l4lite.rules.pack import RulePack

    return RulePack.shared(list(rules_files))


def scan_shard(task: ShardTask) -> ShardResult:
    """Scan one shard: the same pass as ``pipeline.scan_files``, keeping the weighted rank ties."""
    from l4lite.ingest.reader import IngestOptions
    from l4lite.mining.miner import TemplateMiner
    from l4lite.scan.job import feed_files
    from l4lite.scan.scanner import Scanner

    started = time.perf_counter()
    accounting = Accounting()
    streams = RotatedStreams()  # the rotated logs' pieces, noted as they are read
    ingest = IngestOptions(node_from=task.context.node_from, fold_shapes=True, streams=streams).use(task.context)
    rules = _rules(task.rules_files)
    # Hugging Face prints its step and epoch totals once (rank 0): every shard needs them to turn epochs into
    # iterations, as the one pass has them from the job's first file on
    scanner = Scanner(TemplateMiner(), rules, bucket_seconds=task.bucket_seconds, root=task.root,
                      steps_per_epoch=task.steps_per_epoch)
    feed_files(scanner, task.files, ingest, accounting)
    n = accounting.records
    for w in rules.warnings:
        accounting.warn(w)
    first_rank_nodes = scanner.rank_nodes_seen()  # before finish() folds the ties in
    ties = ingest.rank_map.as_dict()
    scan = scanner.finish(accounting, ties)
    scan.streams = streams
    exemplars = {key: list(recs) for key, recs in scan.exemplars.items()}
    resolved = {f"rank:{r}": n for r, n in ties.items()}  # as JobScan.remap_nodes re-keys rank-only nodes
    phase_end = {resolved.get(node, node): phase for node, phase in scanner.phase_now().items()}
    return ShardResult(task.index, scan, ingest.rank_map, first_rank_nodes, exemplars, n, task.size,
                       time.perf_counter() - started, phase_end)


def _continued(left: ShardResult, right: ShardResult) -> tuple[list[Any], list[Any]]:
    """The right shard's metric points and markers as one pass that read the left shard first would have them
    (the points are changed in place):
    a (node, rank)'s points numbered on from the left's, and a node's first phase marker dropped when it was
    only implied by a metric line and the node was in that phase already at the end of the left shard."""
    from l4lite.scan.scanner import node_key

    last_seq: dict[tuple[str | None, int | None], int] = {}
    for p in left.scan.metrics:
        key = (p.node, p.rank)
        if p.seq > last_seq.get(key, 0):
            last_seq[key] = p.seq
    metrics = right.scan.metrics
    if last_seq:  # the right shard's points are its own (a merge consumes its inputs): renumbered in place
        for p in metrics:
            offset = last_seq.get((p.node, p.rank))
            if offset:
                p.seq += offset
    markers = right.scan.markers
    if left.phase_end:
        # A merged scan keeps its markers in time order, where an untimed marker comes last: a node's first
        # marker is found by file order instead (files sorted by path, then line; list order within a line).
        keys = [node_key(m) for m in markers]  # a marker's node and rank, keyed as the scan keys its records
        first: dict[str, tuple[str, int, int]] = {}
        for i, (m, key) in enumerate(zip(markers, keys, strict=True)):
            at = (m.file, m.line, i)
            if key not in first or at < first[key]:
                first[key] = at
        markers = [m for i, (m, key) in enumerate(zip(markers, keys, strict=True))
                   if not (m.detail.get("implied") and first[key] == (m.file, m.line, i)
                           and left.phase_end.get(key) == m.kind)]
    return metrics, markers


def steps_per_epoch_hint(files: Sequence[InputFile], head_lines: int = 400) -> float | None:
    """Steps per epoch from Hugging Face's "Num Epochs = E" and "Total optimization steps = N", printed once
    near the start of rank 0's log, read before the shards are scanned."""
    import gzip
    import zlib

    from l4lite.scan.metrics import parse_job_facts
    from l4lite.scan.scanner import steps_per_epoch

    for f in files:
        epochs: int | None = None
        try:
            opener = gzip.open if f.compressed else open
            with opener(f.path, "rt", encoding="utf-8", errors="replace") as fh:  # type: ignore[operator]
                for n, line in enumerate(fh):
                    if n >= head_lines:
                        break
                    if "Epochs =" in line:
                        epochs = parse_job_facts(line).get("num_epochs", epochs)
                    elif "steps =" in line:
                        steps = parse_job_facts(line).get("total_steps")
                        if steps:
                            return steps_per_epoch(steps, epochs)
        except (OSError, EOFError, zlib.error):  # unreadable, truncated or corrupt: ingest warns about it
            continue
    return None


# ---------------------------------------------------------------------------------------------- merging
def merge_results(left: ShardResult, right: ShardResult) -> ShardResult:
    """Merge two adjacent shard results (``left`` before ``right`` in file order); associative, so results
    can merge in any tree as long as neighbours stay neighbours."""
    from l4lite.scan.scanner import EXEMPLAR_CAP

    node_last = dict(left.scan.node_last)
    for node, (t, n) in right.scan.node_last.items():  # one pass keeps the last time seen, in file order
        t0, n0 = node_last.get(node, (None, 0))
        node_last[node] = (t if t is not None else t0, n0 + n)
    node_first = dict(right.scan.node_first)
    for node, t in left.scan.node_first.items():  # ... and the first time seen
        if t is not None or node not in node_first:
            node_first[node] = t
    progress = {node: _progress_in_order(left.scan.progress.get(node), right.scan.progress.get(node))
                for node in {**left.scan.progress, **right.scan.progress}}
    right.scan.metrics, right.scan.markers = _continued(left, right)
    scan = left.scan.merge(right.scan)
    scan.node_last, scan.node_first, scan.progress = node_last, node_first, progress
    ties = RankMap().merge(left.ties).merge(right.ties)
    first = dict(left.first_rank_nodes)
    for rank, node in right.first_rank_nodes.items():
        first.setdefault(rank, node)
    exemplars = {key: list(recs) for key, recs in left.exemplars.items()}
    for key, recs in right.exemplars.items():
        mine = exemplars.setdefault(key, [])
        mine.extend(recs[: max(0, EXEMPLAR_CAP - len(mine))])
    return ShardResult(left.index, scan, ties, first, exemplars, left.records + right.records,
                       left.bytes + right.bytes, left.seconds + right.seconds, {**left.phase_end, **right.phase_end})


def _progress_in_order(left: Progress | None, right: Progress | None) -> Progress:
    """Two nodes' progress summaries, ``left`` read first: what one pass over both would keep (the first point
    of the earlier, the last of the later unless it went backwards less than a restart does)."""
    from l4lite.scan.scanner import Progress

    if left is None or left.points == 0:
        return replace(right) if right is not None else Progress()
    out = replace(left)
    if right is None or right.points == 0:
        return out
    it, last = right.last_iteration, left.last_iteration
    if it is None or last is None or it >= last or it < last // 2:
        out.last_iteration = it if it is not None else last
        out.last_time, out.last_file, out.last_line = right.last_time, right.last_file, right.last_line
        out.after_time = right.after_time
    out.points += right.points
    return out


def finish_merge(result: ShardResult, root: str, accounting: Accounting, max_cells: int | None = None) -> JobScan:
    """The job's scan from the merged shards: resolve rank-only node keys with the merged ties, keep the
    first exemplars in file order, bound the count table as one pass would (``max_cells``: the scan's
    ``MAX_CELLS`` unless given)."""
    from l4lite.scan.jobscan import collapsed, job_nodes, rebucket
    from l4lite.scan.scanner import MAX_CELLS, JobScan

    max_cells = MAX_CELLS if max_cells is None else max_cells
    scan = result.scan
    merged = JobScan(root=root, accounting=accounting, bucket_seconds=scan.bucket_seconds)
    merged.merge(scan)
    merged.exemplars = result.exemplars
    merged.rank_nodes = dict(result.first_rank_nodes)
    merged.remap_nodes(result.ties.as_dict()).place_error_records()
    unify_templates(merged)
    while len(merged.counts) > max_cells and not collapsed(merged.counts):
        merged.counts = rebucket(merged.counts, merged.bucket_seconds, merged.bucket_seconds * 2)
        merged.bucket_seconds *= 2
    merged.info["nodes"] = job_nodes(merged.node_last)
    return merged


def remine(texts: Sequence[str], sim_th: float = 0.5, depth: int = 4, max_children: int = 100) -> dict[str, str]:
    """Template texts (in the order they were first seen) -> the template Drain makes of them together."""
    from l4lite.mining.miner import BoundedDrain

    drain = BoundedDrain(sim_th=sim_th, depth=depth, max_children=max_children)
    cluster_of: dict[str, int] = {}
    for text in texts:
        if text and text not in cluster_of:
            cluster_of[text] = drain.add_log_message(text)[0].cluster_id
    return {text: drain.id_to_cluster[cid].get_template() for text, cid in cluster_of.items()}


def unify_templates(scan: JobScan, sim_th: float = 0.5, depth: int = 4, max_children: int = 100) -> int:
    """Re-mine the shards' template texts with one Drain, in the order the merged scan first saw them, and
    re-key everything to the resulting templates (in place). Returns the number of templates folded away.

    A shard that saw only ``busId 0000:07:00.0`` keeps ``busId <NUM>`` where the whole job's pass generalised to
    ``busId <*>``; a shard that saw only ``[receive]`` keeps the word where the pass has ``<*>``. Drain over the
    shard templates (each a generalised message) joins them as Drain over all messages would have.
    """
    from l4lite.mining.miner import template_id
    from l4lite.scan.scanner import EXEMPLAR_CAP, TemplateStat

    if len(scan.templates) < 2:
        return 0
    final = remine([stat.template for stat in scan.templates.values()], sim_th, depth, max_children)
    new_id: dict[str, str] = {}
    text_of: dict[str, str] = {}
    for tid, stat in scan.templates.items():
        text = final.get(stat.template, stat.template) if stat.template else stat.template
        nid = template_id(text) if text != stat.template else tid
        new_id[tid] = nid
        text_of[nid] = text
    if all(tid == nid for tid, nid in new_id.items()):
        return 0
    templates: dict[str, TemplateStat] = {}
    for tid, stat in scan.templates.items():
        nid = new_id[tid]
        mine = templates.get(nid)
        if mine is None:
            templates[nid] = TemplateStat(nid, text_of[nid], stat.count, dict(stat.nodes), dict(stat.levels),
                                          dict(stat.sources), stat.first_time, stat.last_time)
        else:
            mine.merge(stat)
    folded = len(scan.templates) - len(templates)
    scan.templates = templates
    counts: dict[tuple[str, int, str], int] = {}
    for (node, bucket, tid), n in scan.counts.items():
        key = (node, bucket, new_id.get(tid, tid))
        counts[key] = counts.get(key, 0) + n
    scan.counts = counts

    def fix(rec: Any) -> None:
        nid = new_id.get(rec.template_id)
        if nid is not None:
            rec.template_id, rec.template = nid, text_of[nid]

    exemplars: dict[tuple[str, str], list[Any]] = {}
    joined: set[tuple[str, str]] = set()
    for (tid, node), recs in scan.exemplars.items():
        key = (new_id.get(tid, tid), node)
        if key in exemplars:
            joined.add(key)
        exemplars.setdefault(key, []).extend(recs)
    for key in joined:
        exemplars[key].sort(key=lambda r: (r.file, r.line))
        del exemplars[key][EXEMPLAR_CAP:]
    for recs in exemplars.values():
        for rec in recs:
            fix(rec)
    scan.exemplars = exemplars
    for hit in scan.hits:
        fix(hit.record)
    return folded
