"""The scan's run path: a run of lines of known shapes (``l4lite.ingest.runs``) added to the scanner's tables
with what depends only on a line's shape worked out once per shape.

``Scanner`` inherits it; ``tests/test_runs.py`` checks that a runs scan equals the per-record scan of the same
lines, so the two paths cannot drift apart.
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from typing import Any, NamedTuple

import numpy as np

from l4lite.ingest.shape import fold_safe, shape_of
from l4lite.ingest.shaperun import ShapeRun
from l4lite.mining.runmine import mine_run
from l4lite.records import Record
from l4lite.rules.blind import FOLDED, SHAPE, ShapeRules, from_head, rule_heads
from l4lite.rules.needs import shape_candidates
from l4lite.scan.jobscan import EXEMPLAR_CAP, MARKER_CAP, METRIC_CAP, UNKNOWN_NODE, Marker, Progress
from l4lite.scan.points import (
    EXEMPLAR_BUDGET,
    G_MARKER,
    G_METRIC,
    G_RARE,
    LONG_LINE,
    METRIC_CACHE,
    Deferred,
    PendingPoint,
    deferred_metric,
    may_be_active,
    message_gates,
    remember,
    thin_series,
)
from l4lite.scan.runtables import RunTables

_UNSET: Any = object()  # a shape whose rules' memo is not looked up yet
RULE_ANSWERS = 4096  # messages whose rule answers are remembered per candidate set (a full memo is emptied)


class KnownIds(NamedTuple):
    """A message's rule answers as the run path remembers them: the ids of the rules it meets first, and their
    matches (None until a line of the message is kept as evidence)."""

    matches: Any
    ids: tuple[str, ...]


def hit_rule_id(match: Any) -> str:
    """The rule id a match counts under (``Scanner._add_hit``)."""
    rule = getattr(match, "rule", None)
    return str(getattr(rule, "id", None) or getattr(match, "rule_id", None) or rule)


class RunPath(RunTables):
    """``Scanner._add_run`` and its helpers (a mixin: the state is the scanner's)."""

    def _add_run(self, run: ShapeRun) -> None:
        """``add_many`` of a run's records (``l4lite.ingest.runs``), with what depends only on a line's shape worked out
        once per shape, and a record built only where one is kept (an exemplar, a metric point). A line that a
        rule may match or that may be a rare line (marker, job fact, telemetry header) goes as a record, and so
        does a line of GPU telemetry that may report a slowdown (``may_be_active``)."""
        times = run.times
        if (times.count(None) != len(times)) if times[0] is None else bool(np.isnan(run.time_values()).any()):
            # a run of timed and untimed lines (across the file's first timestamp; a relayed copy amid lines read
            # from their own plans): rare, and the columns below take a run as all timed or all untimed
            self.add_many(run.records())
            return
        hot: set[int] = set()
        if self._csv_headers and run.file in self._csv_headers and may_be_active("\n".join(run.texts)):
            hot = {i for i, text in enumerate(run.texts) if may_be_active(text)}
        table = run.table
        shapes = run.shapes
        texts = run.texts
        rules = self.rules
        line_rules = getattr(rules, "line_rules", None) if hasattr(rules, "match_line") else None
        fold_rules = line_rules is not None and getattr(rules, "fold", False)  # ``match_line`` tests rules' needs
        gates_of: dict[int, int] = {}
        deferred_of: list[Deferred | None] = [None] * len(table)
        rules_of: list[Any] = [None] * len(table)
        parser = self._metric_parser
        slow: set[int] = set()
        marks: set[int] = set()  # shapes whose lines may be phase markers: read at their place in the run
        # folded shapes (``RunShape.fold_from``) whose lines are each looked at for a gate keyword the fold hides
        checked: set[int] = set()
        first = dict(zip(reversed(shapes), range(len(shapes) - 1, -1, -1), strict=True))
        for x in first:
            sh = table[x]
            folded = sh.fold_from >= 0
            if folded and line_rules is not None and self._fold_hidden():
                checked.add(x)
            if rules is not None:
                found = LONG_LINE
                if line_rules is not None:
                    found = self._rule_gate.get(sh.key)
                    if found is None:
                        found = remember(self._rule_gate, sh.key, line_rules(sh.key) or LONG_LINE)
                if found is LONG_LINE:
                    slow.add(x)
                    continue
                if (found[0] or found[1]) and fold_rules:
                    # the rules whose literals the shape rules out are not tried on each line (``shape_candidates``)
                    at = (sh.key, sh.msg_start, sh.msg_end, folded)
                    narrowed = self._shape_rules.get(at)
                    if narrowed is None or narrowed[0] is not found:
                        narrowed = remember(self._shape_rules, at, (found, shape_candidates(  # type: ignore[arg-type]
                            found, sh.key, sh.msg_start, sh.msg_end, folded)))
                    found = narrowed[1]
                if found[0] or found[1]:
                    rules_of[x] = found
            msg = texts[first[x]][sh.msg_start:sh.msg_end]
            # a folded shape's message as folded: every gate word is fold-safe (``tests/test_fold.py``), so the
            # gates are one answer for all its lines, found once per job rather than once per run of it
            msg_key = sh.msg_key if sh.msg_key is not None else \
                sh.key[sh.msg_start:sh.msg_end] if folded else shape_of(msg)
            gates = self._gates.get(msg_key)
            if gates is None:
                gates = remember(self._gates, msg_key, message_gates(msg))
            if folded and gates & G_METRIC:
                # the gates' words are fold-safe (tests/test_fold.py), a metric plan's offsets are not: a metric
                # line of a folded shape goes as a record
                slow.add(x)
                continue
            if gates & G_METRIC:
                plan = parser.deferred(msg_key)
                deferred_of[x] = deferred_metric(plan, sh.msg_start, sh.msg_end)
                if plan is None and parser.not_metric(msg_key):
                    gates &= ~G_METRIC  # its lines would each be parsed to None (DeepSpeed's timer lines)
            if gates & G_RARE:
                # A line that may be a phase marker (NCCL's init lines: one in a dozen) is read at its place in the
                # run; a job fact or a telemetry header changes how later lines read, so it goes alone as a record
                (slow if gates & (G_RARE & ~G_MARKER) or deferred_of[x] is not None else marks).add(x)
            gates_of[x] = gates
        if not slow and not hot:
            self._add_run_lines(run, gates_of, deferred_of, rules_of, marks, checked)
            return
        a = 0
        for i, x in enumerate(shapes):
            if x in slow or i in hot:
                if a < i:
                    self._add_run_lines(run.part(a, i), gates_of, deferred_of, rules_of, marks, checked)
                self.add_many(run.part(i, i + 1).records())
                a = i + 1
        if a < len(shapes):
            self._add_run_lines(run.part(a, len(shapes)), gates_of, deferred_of, rules_of, marks, checked)

    def _fold_hidden(self) -> tuple[bytes, ...]:
        """The rule gate's keywords that a line's folded shape may hide (``shape.fold_safe``: a keyword starting
        or ending with a word of hex letters, ``edac``): the shape's gate answer holds for a line of it unless one
        of these is in the line's own key. Worked out once per scanner."""
        hidden = self._hidden_words
        if hidden is None:
            words = getattr(self.rules, "gate_words", None)
            hidden = self._hidden_words = tuple(w for w in words or () if not fold_safe(w.decode("utf-8",
                                                                                                 "surrogatepass")))
        return hidden

    def _line_gate(self, key: bytes) -> Any:
        """The rules that may match a line of this key (``Scanner.add_many``'s lookup): None if none may."""
        found = self._rule_gate.get(key)
        if found is None:
            found = remember(self._rule_gate, key, self.rules.line_rules(key) or LONG_LINE)  # type: ignore[union-attr]
        return found if found is not LONG_LINE and (found[0] or found[1]) else None

    def _add_run_lines(self, run: ShapeRun, gates_of: dict[int, int], deferred_of: list[Deferred | None],
                       rules_of: list[Any], marks: set[int] | frozenset[int] = frozenset(),
                       checked: set[int] | frozenset[int] = frozenset()) -> None:
        """``_add_run`` of lines of shapes without rare tests but phase markers (``gates_of``: their gates). A metric
        line of a shape in ``deferred_of`` is kept with its plan, not its values (``deferred_metric``); a line of a
        shape in ``rules_of`` is matched against the rules its shape may meet (``RulePack.line_rules``), and is a
        record only if one does; a line of a shape in ``checked`` (folded) whose own key holds a keyword the fold
        hides (``_fold_hidden``) is matched against the rules of its own key instead; a line of a shape in
        ``marks`` is looked at as a phase marker where ``Scanner.add_many`` would, after its metric values."""
        hidden = self._fold_hidden() if checked else ()
        if hidden:  # only the words found in the run's keys at all are looked for line by line
            low_keys = b"\n".join(run.keys).lower()
            hidden = tuple(word for word in hidden if word in low_keys)
        run = _one_name(run)
        table = run.table
        shapes = run.shapes
        texts = run.texts
        cids = mine_run(run, self.miner)
        cid_names = self._cid_names
        for cid in set(cids):
            if cid not in cid_names:
                cid_names[cid] = f"#{cid}"
        name_table, name_rows = run.name_table, run.name_rows
        file = run.file
        cells = self._cells
        exemplars = self._exemplars
        metric_cache = self._metric_cache
        metric_parse = self._metric_parser.parse_gated
        match_line = getattr(self.rules, "match_line", None)
        metrics = self._metrics
        seqs = self._seq
        progress = self._progress
        rank_marks = self._rank_marks
        phase_now = self._phase_now
        flag_nodes = self._flag_nodes
        bucket_seconds = self.bucket_seconds
        inf = math.inf
        times = run.times
        timed = times[0] is not None  # else no line of the run has a time (a file without timestamps, such as
        # a Hugging Face Trainer's dicts and tqdm bars): what a record without a time does, line by line
        if timed and self._await_time:  # the run's first time is the time after the progress line
            waiting = self._await_time.pop(file, None)
            if waiting is not None and self._progress[waiting].after_time is None:
                self._progress[waiting].after_time = times[0]
        # per (node, rank, GPU) of the run: [lines, first time, last time, last line, node key, rank is local]; the
        # node tables take them after the loop (in the order the lines gave them)
        seen: dict[tuple[str | None, int | None, int | None], list[Any]] = {}
        distinct: set[int] | None = None  # the run's shapes, taken once where asked
        if name_table is None or name_rows is None:
            rows = None
            rec_node, rank, gpu = run.node, run.rank, run.gpu
            node = rec_node or (f"rank:{rank}" if rank is not None else UNKNOWN_NODE)
            if rank is not None:
                distinct = set(shapes)
            local = distinct is not None and all(table[x].rank_local for x in distinct)  # ``[default1]:`` alone
            seen[(rec_node, rank, gpu)] = [len(times), times[0], times[-1], len(times) - 1, node, local]
        else:  # lines that name their own ranks: each line's entry in the name table, and the table's aggregates
            rows = name_rows.tolist()
            aggs: list[list[Any] | None] = [None] * len(name_table)
        # the template cells, counts and exemplars of the whole run at once where that is sure to come out as
        # line by line (one node, times in order, no table coarsened, the exemplar budget far): else per line
        batched = rows is None and timed and self._tables_at_once(run, cids, node)
        # a line's rule answers by its message, per shape (``_answers_for``); the hits of lines whose rules'
        # evidence is full, per (rule ids, node), counted into ``hit_totals`` after the loop
        answers_of: dict[int, Any] = {}
        alike: dict[int, ShapeRules | None] = {}  # per shape, its rules searched once (``shape_rules``)
        heads_of: dict[int, tuple[str, ...] | None] = {}  # per shape, its rules' heads (``rule_heads``)
        counted: dict[tuple[tuple[str, ...], str], int] = {}
        match_ids = getattr(self.rules, "match_ids", None)
        trusted = getattr(self.rules, "trusted_chars", 0)
        hit_kept, hit_totals, hit_cap = self._hit_kept, self._hit_totals, self.hit_cap
        lines: Any = zip(range(len(shapes)), texts, run.keys, times, shapes, cids, strict=True)
        if batched and rows is None:
            # the tables are counted at once: only a line of a shape with a test of its own needs a look
            if distinct is None:
                distinct = set(shapes)
            busy = {x for x in distinct if rules_of[x] is not None or deferred_of[x] is not None
                    or gates_of[x] & G_METRIC or x in marks or (hidden and x in checked)}
            # a shape whose lines only meet rules: their answers per message, their hits counted at once where
            # the evidence of the rules they meet is full (``_hits_at_once``); the rest of its lines are looked at
            ruled = {x for x in busy if deferred_of[x] is None and not gates_of[x] & G_METRIC and x not in marks
                     and not (hidden and x in checked)} if hit_cap > 0 and match_ids is not None else set()
            if len(busy) < len(distinct) or ruled:
                keys = run.keys
                if ruled:
                    at = self._hits_at_once(run, busy, ruled, rules_of, node, counted, alike, heads_of)
                    lines = [(k, texts[k], keys[k], times[k], shapes[k], cids[k]) for k in at]
                else:
                    lines = [(k, texts[k], keys[k], times[k], x, cids[k]) for k, x in enumerate(shapes)
                             if x in busy]
        first = run.first
        for k, s, key, t, x, cid in lines:
            lineno = first + k
            sh = table[x]
            if rows is not None:
                row = rows[k]
                agg = aggs[row]
                rec_node, rank, gpu = nm = name_table[row]
                if agg is None:  # two entries of the table may be one (node, rank, GPU)
                    agg = seen.get(nm)
                    if agg is None:
                        agg = seen[nm] = [0, t, t, k, rec_node or (f"rank:{rank}" if rank is not None
                                                                   else UNKNOWN_NODE), sh.rank_local]
                    aggs[row] = agg
                agg[0] += 1
                agg[2] = t
                agg[3] = k
                node = agg[4]
            level = sh.level
            if not batched:
                # Scanner.add_many's cell, count and exemplar steps, inlined: this loop runs once per line of a
                # run, where a call per line is what the fast path saves (tests/test_runs.py compares the two)
                ckey = (cid, level, sh.source)
                cell = cells.get(ckey)
                if cell is None:
                    cell = cells[ckey] = [0, inf, -inf]
                cell[0] += 1
                if timed:
                    if t < cell[1]:
                        cell[1] = t
                    if t > cell[2]:
                        cell[2] = t
                    bkey = (node, int(t // bucket_seconds), cid)
                else:
                    bkey = (node, -1, cid)
                counts = self._counts
                counts[bkey] = counts.get(bkey, 0) + 1
                if len(counts) > self.max_cells:
                    self._coarsen()
                    bucket_seconds = self.bucket_seconds
                ekey = (cid, node)
                ex = exemplars.get(ekey)
                if ex is None:
                    if self._exemplar_count < EXEMPLAR_BUDGET or level in ("error", "warning"):
                        exemplars[ekey] = [Record(file, lineno, lineno, rec_node, rank, gpu, sh.source, t, level,
                                                  s[sh.msg_start:sh.msg_end], s, cid_names[cid], "", sh.rank_local, key)]
                        self._exemplar_count += 1
                elif len(ex) < EXEMPLAR_CAP:
                    ex.append(Record(file, lineno, lineno, rec_node, rank, gpu, sh.source, t, level,
                                     s[sh.msg_start:sh.msg_end], s, cid_names[cid], "", sh.rank_local, key))
                    self._exemplar_count += 1
            may_match = rules_of[x]
            answers = answers_of.get(x, _UNSET)  # the memo of the shape's rules' answers (``_answers_for``)
            if hidden and x in checked:
                low = key.lower()
                for word in hidden:
                    if word in low:
                        may_match = self._line_gate(key)
                        answers = _UNSET if may_match is None else self._answers_for(may_match, sh.source)
                        break
            if may_match is not None:
                msg = s[sh.msg_start:sh.msg_end]
                if answers is _UNSET:
                    answers = answers_of[x] = self._answers_for(may_match, sh.source)
                memo = answers if answers is not None and msg and len(msg) <= trusted else None
                if memo is None:
                    found = match_line(may_match, msg or s, s, sh.source)
                    rule_ids = tuple(hit_rule_id(m) for m in found)
                else:
                    found, rule_ids = self._known_ids(x, sh, may_match, may_match is rules_of[x], memo, msg, alike,
                                                      heads_of)
                if rule_ids:
                    full = (rule_ids, node)
                    have = counted.get(full)
                    if have is not None:  # every rule's evidence of this node is full (it stays so): counted only
                        counted[full] = have + 1
                    elif hit_kept[rule_ids[0], node] >= hit_cap and (
                            len(rule_ids) == 1 or all(hit_kept[rid, node] >= hit_cap for rid in rule_ids)):
                        counted[full] = 1
                    else:
                        if found is None:  # the matches themselves, with their groups, for the evidence kept
                            found = match_line(may_match, msg, s, sh.source)
                            memo[msg] = KnownIds(found, rule_ids)  # type: ignore[index]
                        record = Record(file, lineno, lineno, rec_node, rank, gpu, sh.source, t, level, msg, s,
                                        cid_names[cid], "", sh.rank_local, key)
                        for match in found:
                            self._add_hit(match, record, node)
            deferred = deferred_of[x]
            if deferred is not None:  # _add_metric of a point that can wait for its values (kind and gates known)
                token, convert, ia, ib, nan_count, kind, implied = deferred
                iteration = convert(s[ia:ib]) if convert is not None else None
                if nan_count is not None and (nan_count[0](s[nan_count[1]:nan_count[2]]) or (
                        nan_count[3] and iteration is None and self._steps_per_epoch)):
                    # flagged by its NaN counter, or an epoch stands in for the iteration: its values now
                    self._add_metric(token[0].values(s[token[1]:token[2]]), node, rec_node, rank, t, file, lineno,
                                     s)
                    continue
                seq_key = (node, rank)
                seq = seqs[seq_key] = seqs.get(seq_key, 0) + 1
                series = metrics.get(node)
                if series is None:
                    series = metrics[node] = []
                series.append(PendingPoint(token, iteration, seq, rec_node, rank, t, file, lineno, s))
                if len(series) > METRIC_CAP:
                    metrics[node] = thin_series(series, METRIC_CAP // 2, node in flag_nodes)
                if kind == "train":
                    mark = rank_marks.get(seq_key)
                    if mark is None:
                        mark = rank_marks[seq_key] = [None, 0]
                    mark[1] += 1
                    if iteration is not None:
                        mark[0] = iteration
                    prog = progress.get(node)
                    if prog is None:
                        prog = progress[node] = Progress(iteration, iteration, t, t)
                    prog.points += 1
                    last = prog.last_iteration
                    if iteration is None or last is None or iteration >= last or iteration < last // 2:
                        if iteration is not None:
                            prog.last_iteration = iteration
                        prog.last_time = t
                        prog.last_file, prog.last_line = file, lineno
                        prog.after_time = None
                        if not timed:
                            self._await_time[file] = node
                if implied is not None and phase_now.get(node) != implied and len(self._markers) < MARKER_CAP:
                    phase_now[node] = implied
                    self._markers.append(Marker(implied, rec_node, rank, t, file, lineno, iteration,
                                                {"implied": True}))
            elif gates_of[x] & G_METRIC:
                msg = s[sh.msg_start:sh.msg_end]
                values = metric_cache.get(msg)
                if values is None:
                    values = metric_parse(msg, sh.msg_key)
                    if values is not None:
                        if len(metric_cache) >= METRIC_CACHE:
                            metric_cache.clear()
                        metric_cache[msg] = values
                if values is not None:
                    self._add_metric(values, node, rec_node, rank, t, file, lineno, s)
                    if values.get("kind") == "train":
                        continue  # a progress line is no phase marker (as in Scanner.add_many)
            if x in marks:
                msg = s[sh.msg_start:sh.msg_end]
                self._rare(Record(file, lineno, lineno, rec_node, rank, gpu, sh.source, t, level, msg, s,
                                  cid_names[cid], "", sh.rank_local, key), node, msg, gates_of[x], False)
        for (rule_ids, at), k in counted.items():
            for rid in rule_ids:
                hit_totals[rid, at] += k
        self._run_nodes(seen)

    def _known_ids(self, x: int, sh: Any, may_match: Any, own: bool, memo: dict[str, KnownIds], msg: str,
                   alike: dict[int, ShapeRules | None], heads_of: dict[int, tuple[str, ...] | None]) -> KnownIds:
        """The ids of the rules a message of run shape ``x`` meets first (``RulePack.match_ids``), remembered in
        ``memo`` with no matches: where each of them has kept its evidence of this node in full, as on most lines
        of a storage log, the hits are only counted and no match is built. ``own``: ``may_match`` is the shape's
        own rules (not a folded line's own key's), whose shape answers and heads are kept in ``alike`` and
        ``heads_of`` for the run."""
        shaped = alike.get(x, _UNSET) if own else None
        if shaped is _UNSET:
            shaped = alike[x] = self._shape_answers_of(sh, may_match[0], msg)
        if shaped is not None and not shaped.per_line:
            return KnownIds(None, shaped.ids(msg))
        # by the message's part from its rules' literal heads where each rule has one: a metric line new on every
        # line (``... nan iterations:   0 |``) is one entry (``rule_heads``)
        heads = heads_of.get(x, _UNSET) if own else rule_heads(may_match[0])
        if heads is _UNSET:
            heads = heads_of[x] = rule_heads(may_match[0])
        text = msg if heads is None else from_head(msg, heads)
        known = memo.get(text)
        if known is None:
            if len(memo) >= RULE_ANSWERS:
                memo.clear()
            known = memo[text] = KnownIds(None, self.rules.match_ids(  # type: ignore[union-attr]
                may_match[0], msg, sh.source) if shaped is None else shaped.ids(msg))
        elif known.matches is not None and text != msg:  # matches of another message
            known = KnownIds(None, known.ids)
        return known

    def _hits_at_once(self, run: ShapeRun, busy: set[int], ruled: set[int], rules_of: list[Any], node: str,
                      counted: dict[tuple[tuple[str, ...], str], int], alike: dict[int, ShapeRules | None],
                      heads_of: dict[int, tuple[str, ...] | None]) -> list[int]:
        """The lines of a run of one node (in order) that ``_add_run_lines`` still has to look at one by one, of
        the shapes in ``busy``: all lines of a shape not in ``ruled``; of a shape in ``ruled`` (it only meets
        rules), a line whose message the rules' memo does not take, and a line that meets rules whose evidence
        of ``node`` is not full when the run starts (it may be kept as evidence). The rules a line meets are
        decided once per distinct message of its shape, or once per shape where they answer alike for all its
        lines (``ShapeRules``); a line that meets none needs nothing more, and the hits of a line whose rules'
        evidence is full are counted into ``counted`` here (full evidence stays full, so that is what the line
        by line check gives). Where no line is left the loop over the run's lines is skipped."""
        table, texts = run.table, run.texts
        codes = run.shape_codes()
        order = np.argsort(codes, kind="stable")
        ends = np.cumsum(np.bincount(codes, minlength=len(table))).tolist()
        trusted = getattr(self.rules, "trusted_chars", 0)
        hit_kept, hit_cap = self._hit_kept, self.hit_cap
        full_of: dict[tuple[str, ...], bool] = {}
        picked: list[Any] = []
        for x in busy:
            at = order[ends[x - 1] if x else 0:ends[x]]
            sh = table[x]
            memo = self._answers_for(rules_of[x], sh.source) if x in ruled else None
            if memo is None:
                picked.append(at)
                continue
            ms, me = sh.msg_start, sh.msg_end
            idx = at.tolist()
            msgs = [texts[k][ms:me] for k in idx]
            tally = Counter(msgs)
            look: set[str] = set()
            for msg, n in tally.items():
                if not msg or len(msg) > trusted:  # the memo does not take it: its lines are matched one by one
                    look.add(msg)
                    continue
                ids = self._known_ids(x, sh, rules_of[x], True, memo, msg, alike, heads_of).ids
                if not ids:
                    continue
                full = full_of.get(ids)
                if full is None:
                    full = full_of[ids] = all(hit_kept[rid, node] >= hit_cap for rid in ids)
                if full:
                    counted[ids, node] = counted.get((ids, node), 0) + n
                else:
                    look.add(msg)
            if len(look) == len(tally):
                picked.append(at)
            elif look:
                picked.append(np.array([k for k, msg in zip(idx, msgs, strict=True) if msg in look], np.int64))
        if not picked:
            return []
        return np.sort(np.concatenate(picked)).tolist() if len(picked) > 1 else picked[0].tolist()

    def _answers_for(self, candidates: Any, source: str) -> dict[str, Any] | None:
        """``_rule_answers_of`` these candidate rules, by the rules' identity (``Scanner._rule_answers``)."""
        rule_memo = self._rule_answers
        held = rule_memo.get((id(candidates), source))
        if held is None or held[0] is not candidates:
            if len(rule_memo) >= RULE_ANSWERS:
                rule_memo.clear()
            held = rule_memo[id(candidates), source] = (candidates, self._rule_answers_of(candidates, source))
        return held[1]

    def _shape_answers_of(self, sh: Any, rules: tuple[Any, ...], msg: str) -> ShapeRules | None:
        """``shape_rules`` of a run shape's message rules, kept per shape across runs: the rules that answer alike
        for every line of the shape (``rules.blind``) are searched once, on the first line met."""
        folded = sh.fold_from >= 0
        at = (sh.key, sh.msg_start, sh.msg_end, folded, sh.source)
        held = self._shape_answers.get(at)
        if held is None or held[0] is not rules:
            held = remember(self._shape_answers, at, (rules, shape_rules(  # type: ignore[arg-type]
                self.rules, rules, FOLDED if folded else SHAPE, msg, sh.source)))
        return held[1]

    def _rule_answers_of(self, candidates: Any, source: str) -> dict[str, Any] | None:
        """A memo of the answers of ``match_line`` by message for lines of these candidate rules, or None where
        an answer may depend on more than the message: a rule tried on the whole line (its header holds the
        time), or a pattern run under a timeout (a user's rule, whose timeouts count and disable it). A shipped
        pattern on a message of at most ``trusted_chars`` runs without one, so its answer is the message's:
        a storage or kernel log repeats a few hundred messages (``nfs: server fs3 not responding``) on most
        lines that a rule meets. The folded shapes of one message narrow the gate's rules alike
        (``shape_candidates``) into tuples of their own: their lines share one memo by the rules' ids."""
        by_message, by_text = candidates
        if by_text or not all(getattr(rule, "shipped", False) for rule in by_message):
            return None
        ids = (tuple(rule.id for rule in by_message), source)
        answers = self._rule_answers_by_ids.get(ids)
        if answers is None:
            if len(self._rule_answers_by_ids) >= RULE_ANSWERS:
                self._rule_answers_by_ids.clear()
            answers = self._rule_answers_by_ids[ids] = {}
        return answers

    def _run_nodes(self, seen: dict[tuple[str | None, int | None, int | None], list[Any]]) -> None:
        """The node tables' share of a run's lines, per (node, rank, GPU): what ``add_many`` does line by line."""
        node_count = self._node_count
        node_first = self._node_first
        for (rec_node, rank, _gpu), (n, t0, _t1, _k, node, local) in seen.items():
            have = node_count.get(node)
            if have is None:
                node_count[node] = n
                node_first[node] = t0
            else:
                node_count[node] = have + n
                if node_first[node] is None:
                    node_first[node] = t0
            if rank is not None and not local:  # a local rank names a worker of its node, not the job's
                ranks = self._node_ranks.get(node)
                if ranks is None:
                    self._node_ranks[node] = {rank}
                else:
                    ranks.add(rank)
                if rec_node and rank not in self._rank_nodes:
                    self._rank_nodes[rank] = rec_node
        for _names, (_n, _t0, t1, _k, node, _local) in sorted(seen.items(), key=lambda item: item[1][3]):
            if t1 is not None:  # (an untimed run's lines leave the time of the node's last timed line)
                self._node_time[node] = t1  # the time of the node's last line


def shape_rules(pack: Any, rules: tuple[Any, ...], level: int, message: str, source: str) -> ShapeRules | None:
    """``rules.blind.ShapeRules`` of a shape's rules at ``level`` (``SHAPE``, or ``FOLDED`` for a folded shape), None
    when no rule of them answers alike for every line of the shape."""
    shaped = ShapeRules(pack, rules, level, message, source)
    return shaped if shaped.alike else None


def _one_name(run: ShapeRun) -> ShapeRun:
    """A run whose lines name their own node but all the same one (a syslog file of one host): the run as one
    that names it for every line, so that its cells and counts are taken at once (``_tables_at_once``)."""
    rows = run.name_rows
    if run.name_table is None or rows is None or not len(rows):
        return run
    names = {run.name_table[r] for r in np.unique(rows).tolist()}
    if len(names) != 1:
        return run
    node, rank, gpu = names.pop()
    return dataclasses.replace(run, node=node, rank=rank, gpu=gpu, name_table=None, name_rows=None)
