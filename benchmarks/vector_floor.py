"""How fast parsing can go when the per-line work is vectorised and Python runs once per shape.

A prototype outside the package, to measure a ceiling: a file's bytes are one numpy buffer, its lines' starts
and ends come from one comparison with the newline; the header (syslog time, host, program and a kernel uptime;
dmesg's uptime; an ISO time) is found and its time read from the lines' first 64 bytes with numpy; the messages
are one compacted copy of the bytes after the headers, split into tokens with numpy (ASCII whitespace, as
``str.split`` for ASCII text); the tokens' digits are folded to 0 with one gather and each distinct folded token's
hex words folded with RE2 (``pyarrow.compute``); each distinct folded form is masked once with the package's masks
(``l4lite.mining.masking``); a line's masked shape is its tokens' codes, dictionary-encoded; the package's
``TemplateMiner`` sees one raw message per distinct shape, and per distinct masked value of the tokens masking
keeps digits in, at the positions where the shape's clusters have no wildcard yet; cluster ids go back to the lines
with ``take``, and one Parquet file (file, line, time, template, text) is written as ``l4lite parse`` compresses
its own. Per job it prints drain3's rate on the same lines, the prototype's and ``l4lite parse --jobs 1``'s per-line
rate (a command's fixed cost measured apart), and how many lines get the same template text as in ``l4lite
parse``'s output.

Not in the prototype (``l4lite parse`` does them): levels, sources, node, rank and GPU per line, records of
several lines, a time's year from the job, clock checks against the job's span, line accounting. The mining is
not Drain's line order: a shape's later lines take the cluster found for its first ones, and shapes are mined in
the order of their first lines.

    python benchmarks/vector_floor.py /tmp/zoo11/storage /tmp/zoo11/kernel /tmp/zoo11/composer
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

sys.path.insert(0, str(Path(__file__).resolve().parent))
from throughput import drain3_baseline  # noqa: E402

from l4lite.mining.masking import DEFAULT_MASKS, Masker  # noqa: E402
from l4lite.mining.miner import TemplateMiner  # noqa: E402

MASK_PATTERN = re.compile("|".join(f"(?P<{name}>{regex})" for name, regex in DEFAULT_MASKS))
FOLD = np.arange(256, dtype=np.uint8)
FOLD[ord("1"):ord("9") + 1] = ord("0")
# hex words of 8 or more characters with a 0 and a letter (after folding digits) and ``0x`` words, as
# ``ingest.shape.hex_key`` folds them; the first character's class is kept, as ``hex_key`` keeps it, not the
# length (the masks give a hex word of 8 or more characters one placeholder whatever its length)
_LONG = r"(^|[^A-Za-z0-9])([0a-f]{8,})([^A-Za-z0-9]|$)"
_MIXED0 = "\x01(0[0a-f]*[a-f][0a-f]*)([^A-Za-z0-9]|$)"
_MIXEDA = "\x01([a-f][0a-f]*0[0a-f]*)([^A-Za-z0-9]|$)"
_HEX0X = r"(^|[^A-Za-z0-9])0x[0a-f]+([^A-Za-z0-9]|$)"


@dataclass
class FileLines:
    """A file's lines: its bytes, where each line starts and ends (without its newline), the header's length,
    the time read from it, and the messages (the lines without their headers) as one string array."""

    path: Path
    buf: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    head: np.ndarray
    times: np.ndarray
    messages: pa.Array

    @property
    def n(self) -> int:
        return len(self.starts)


WINDOW = 64  # bytes of a line's start in which its header is looked for
_MONTHS = {m.encode(): i for i, m in enumerate(["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep",
                                                 "Oct", "Nov", "Dec"])}
_MONTH_CODE = np.full(1 << 24, -1, dtype=np.int8)
for _name, _i in _MONTHS.items():
    _MONTH_CODE[(_name[0] << 16) | (_name[1] << 8) | _name[2]] = _i
_DAYS_BEFORE = np.array([0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334], dtype=np.int64)
WS = np.zeros(256, dtype=bool)
WS[[9, 10, 11, 12, 13, 28, 29, 30, 31, 32]] = True  # what str.split() splits on among ASCII bytes


def read_file(path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A file's bytes and its lines' starts and ends (newlines found with one numpy comparison)."""
    raw = path.read_bytes()
    buf = np.frombuffer(raw, dtype=np.uint8)
    nl = np.flatnonzero(buf == 10)
    ends = nl if raw.endswith(b"\n") or not raw else np.append(nl, len(buf))
    starts = np.empty(len(ends), dtype=np.int64)
    if len(ends):
        starts[0] = 0
        starts[1:] = nl[:len(ends) - 1] + 1
    return buf, starts, ends.astype(np.int64)


def windows(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """The first ``WINDOW`` bytes of every line, 0 past its end."""
    idx = starts.astype(np.int32)[:, None] + np.arange(WINDOW, dtype=np.int32)[None, :]
    out = buf[np.minimum(idx, len(buf) - 1)]
    out[idx >= ends.astype(np.int32)[:, None]] = 0
    return out


def _digit(w: np.ndarray, *cols: int) -> np.ndarray:
    ok = np.ones(len(w), dtype=bool)
    for c in cols:
        ok &= (w[:, c] >= 48) & (w[:, c] <= 57)
    return ok


def _num(w: np.ndarray, a: int, b: int) -> np.ndarray:
    out = np.zeros(len(w), dtype=np.int64)
    for c in range(a, b):
        out = out * 10 + (w[:, c].astype(np.int64) - 48)
    return out


def _first(cond: np.ndarray, start: int) -> np.ndarray:
    """Per row, the first column at or after ``start`` where ``cond`` holds, -1 when none."""
    sub = cond[:, start:]
    hit = sub.any(axis=1)
    return np.where(hit, sub.argmax(axis=1) + start, -1)


def _epoch(year: np.ndarray | int, month: np.ndarray, day: np.ndarray, hms: np.ndarray) -> np.ndarray:
    year = np.asarray(year, dtype=np.int64)
    y = year - 1
    days = 365 * (year - 1970) + (y // 4 - y // 100 + y // 400) - (1969 // 4 - 1969 // 100 + 1969 // 400)
    leap = ((year % 4 == 0) & (year % 100 != 0)) | (year % 400 == 0)
    days = days + _DAYS_BEFORE[month] + ((month > 1) & leap) + day - 1
    return (days * 86400 + hms).astype(np.float64)


def headers(w: np.ndarray, year: int) -> tuple[np.ndarray, np.ndarray]:
    """Per line: the header's length in bytes (0: none of the layouts) and its time (NaN: none), read from
    the lines' first bytes: syslog (``Nov 29 04:01:05 host prog[pid]: [ 123.456] ``), dmesg's ``[ 123.456] ``
    (the uptime), and an ISO time (``2025-11-29 04:01:04,162: ``)."""
    n = len(w)
    head = np.zeros(n, dtype=np.int64)
    times = np.full(n, np.nan)
    colon_sp = np.zeros_like(w, dtype=bool)
    colon_sp[:, :-1] = (w[:, :-1] == 58) & (w[:, 1:] == 32)
    brk_sp = np.zeros_like(w, dtype=bool)
    brk_sp[:, :-1] = (w[:, :-1] == 93) & (w[:, 1:] == 32)
    # syslog
    month = _MONTH_CODE[(w[:, 0].astype(np.int64) << 16) | (w[:, 1].astype(np.int64) << 8) | w[:, 2]]
    sys_ok = (month >= 0) & (w[:, 3] == 32) & ((w[:, 4] == 32) | _digit(w, 4)) & _digit(w, 5, 7, 8, 10, 11, 13, 14) \
        & (w[:, 6] == 32) & (w[:, 9] == 58) & (w[:, 12] == 58) & (w[:, 15] == 32)
    prog_end = _first(colon_sp, 17)
    sys_ok &= prog_end > 0
    rows = np.arange(n)
    after = w[rows, np.minimum(prog_end + 3, WINDOW - 1)]
    up_open = sys_ok & (w[rows, np.minimum(prog_end + 2, WINDOW - 1)] == 91) & ((after == 32) | ((after >= 48) & (after <= 57)))
    up_end = _first(brk_sp, 0)
    sys_head = np.where(up_open & (up_end > prog_end), up_end + 2, prog_end + 2)
    head[sys_ok] = sys_head[sys_ok]
    day = np.where(w[:, 4] == 32, 0, w[:, 4].astype(np.int64) - 48) * 10 + (w[:, 5].astype(np.int64) - 48)
    hms = _num(w, 7, 9) * 3600 + _num(w, 10, 12) * 60 + _num(w, 13, 15)
    times[sys_ok] = _epoch(year, month[sys_ok].astype(np.int64), day[sys_ok], hms[sys_ok])
    # dmesg
    dm_ok = ~sys_ok & (w[:, 0] == 91) & ((w[:, 1] == 32) | _digit(w, 1)) & (up_end > 0)
    head[dm_ok] = up_end[dm_ok] + 2
    # ISO
    iso_ok = ~sys_ok & ~dm_ok & _digit(w, 0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18) & (w[:, 4] == 45) \
        & (w[:, 7] == 45) & ((w[:, 10] == 32) | (w[:, 10] == 84)) & (w[:, 13] == 58) & (w[:, 16] == 58)
    space = _first(w == 32, 19)
    iso_ok &= space > 0
    head[iso_ok] = space[iso_ok] + 1
    iso_hms = _num(w, 11, 13) * 3600 + _num(w, 14, 16) * 60 + _num(w, 17, 19)
    times[iso_ok] = _epoch(_num(w, 0, 4)[iso_ok], _num(w, 5, 7)[iso_ok] - 1, _num(w, 8, 10)[iso_ok],
                           iso_hms[iso_ok])
    return head, times


def messages_of(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray, head: np.ndarray) -> pa.Array:
    """The lines without their headers, as one string array over one compacted copy of their bytes."""
    begin = np.minimum(starts + head, ends)
    delta = np.zeros(len(buf) + 1, dtype=np.int8)
    delta[begin] += 1  # no two lines share a begin, nor an end
    delta[ends] -= 1
    keep = np.cumsum(delta[:-1], dtype=np.int8).view(bool)
    data = buf[keep]
    offsets = np.zeros(len(starts) + 1, dtype=np.int64)
    np.cumsum(ends - begin, out=offsets[1:])
    return pa.Array.from_buffers(pa.large_string(), len(starts), [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def split_tokens(messages: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """Every message's whitespace-separated tokens (as ``str.split`` gives them for ASCII text) as one string
    array, and the offsets of each message's tokens in it."""
    _validity, offs, data = messages.buffers()
    offsets = np.frombuffer(offs, dtype=np.int64)[: len(messages) + 1]
    buf = np.frombuffer(data, dtype=np.uint8)[: offsets[-1]] if data is not None else np.zeros(0, np.uint8)
    ws = WS[buf]
    solid = ~ws
    tok_start = solid.copy()
    if len(buf):
        tok_start[1:] &= ws[:-1]
        line_first = offsets[:-1][offsets[:-1] < len(buf)]
        tok_start[line_first] = solid[line_first]  # a message's first byte starts a token whatever precedes it
    token_data = buf[solid]
    first = np.flatnonzero(tok_start[solid])
    tok_offsets = np.append(first, len(token_data)).astype(np.int64)
    tokens = pa.Array.from_buffers(pa.large_string(), len(first), [None, pa.py_buffer(tok_offsets),
                                                                     pa.py_buffer(token_data)])
    line_offsets = np.searchsorted(np.flatnonzero(tok_start), offsets).astype(np.int64)
    return tokens, line_offsets


def fold_digits(arr: pa.Array) -> pa.Array:
    """The same strings with every ASCII digit a 0, from one gather over the data buffer."""
    validity, offsets, data = arr.buffers()
    folded = FOLD[np.frombuffer(data, dtype=np.uint8)]
    return pa.Array.from_buffers(arr.type, len(arr), [validity, offsets, pa.py_buffer(folded)], offset=arr.offset)


def fold_hex(arr: pa.Array) -> pa.Array:
    """Hex words folded (see ``_LONG``)."""
    arr = pc.replace_substring_regex(arr, _HEX0X, "\\1\xffx\xff\\2")
    marked = pc.replace_substring_regex(arr, _LONG, "\\1\x01\\2\\3")
    marked = pc.replace_substring_regex(marked, _MIXED0, "\xff0\xff\\2")
    marked = pc.replace_substring_regex(marked, _MIXEDA, "\xffa\xff\\2")
    return pc.replace_substring(marked, "\x01", "")


@dataclass
class Tokens:
    """The messages' tokens: raw (flat), each token's digit-folded form code, and whether masking keeps
    digits in it; per line, the flat indices of its masked tokens after a repeated placeholder collapses."""

    flat: pa.Array
    form: np.ndarray  # per flat token: code of its digit-folded text
    form_reps: list[str]  # per form: its first token's raw text
    masked_idx: np.ndarray  # flat indices of the tokens a line's masked text keeps, line after line
    line_start: np.ndarray  # per line: where its tokens start in masked_idx (and n_lines + 1 entries)


@dataclass
class Shapes:
    """Per line its masked shape's code (kept tokens blanked), per shape the positions of kept tokens."""

    shape: np.ndarray
    shape_kept: dict[int, tuple[int, ...]]
    slow: np.ndarray  # lines whose masked text the codes cannot give (a list of names): mined one by one
    tokens: Tokens


def masked_shapes(messages: pa.Array, masker: Masker) -> Shapes:
    """Mask every line's tokens once per distinct hex-folded form and code each line's masked shape."""
    flat, offsets = split_tokens(messages)
    enc = pc.dictionary_encode(fold_digits(flat))
    form = np.asarray(enc.indices)
    n_forms = len(enc.dictionary)
    first = first_rows(form, n_forms)
    form_reps = flat.take(pa.array(first)).to_pylist()
    # a form's hex-folded key: one masking per key (masking is blind to digits and to hex words' letters)
    wide_enc = pc.dictionary_encode(fold_hex(enc.dictionary))
    form_wide = np.asarray(wide_enc.indices).astype(np.int64)
    wide_first = first_rows(form_wide, len(wide_enc.dictionary))
    wide_reps = [form_reps[i] for i in wide_first.tolist()]
    out, kept = masker.mask_list(wide_reps)
    vocab: dict[str, int] = {"\x00": 0}
    wide_code = np.array([vocab.setdefault(text, len(vocab)) for text in out], dtype=np.int32)
    wide_kept = np.zeros(len(wide_reps), dtype=bool)
    wide_kept[kept] = True
    wide_code[wide_kept] = 0
    collapsible = np.array(["<" in t and not any(c.isdigit() for c in t) for t in vocab])
    wide = form_wide[form]
    tok = wide_code[wide]
    is_kept = wide_kept[wide]
    n_lines = len(messages)
    line_of = np.repeat(np.arange(n_lines), np.diff(offsets))
    same_prev = np.zeros(len(tok), dtype=bool)
    if len(tok):
        same_prev[1:] = (line_of[1:] == line_of[:-1]) & (tok[1:] == tok[:-1])
    drop = same_prev & collapsible[tok]
    # three kept tokens in a row (maybe a list of names, which masking folds): such lines are mined one by one
    slow = np.zeros(n_lines, dtype=bool)
    if len(tok) > 2:
        run3 = is_kept[2:] & is_kept[1:-1] & is_kept[:-2] & (line_of[2:] == line_of[:-2])
        slow[line_of[2:][run3]] = True
    masked_idx = np.flatnonzero(~drop)
    counts = np.bincount(line_of[masked_idx], minlength=n_lines)
    line_start = np.zeros(n_lines + 1, dtype=np.int64)
    np.cumsum(counts, out=line_start[1:])
    shape_bin = pa.Array.from_buffers(pa.binary(), n_lines, [None, pa.py_buffer((line_start * 4).astype(np.int32)),
                                                             pa.py_buffer(tok[masked_idx].astype(np.int32))])
    shape_enc = pc.dictionary_encode(shape_bin)
    shape = np.asarray(shape_enc.indices)
    shape_kept: dict[int, tuple[int, ...]] = {}
    for s, blob in enumerate(shape_enc.dictionary.to_pylist()):
        pos = tuple(np.flatnonzero(np.frombuffer(blob, dtype=np.int32) == 0).tolist())
        if pos:
            shape_kept[s] = pos
    return Shapes(shape, shape_kept, slow, Tokens(flat, form, form_reps, masked_idx, line_start))


MAX_FORMS = 64  # forms at one kept position above which its values are told apart by their raw text


def residue_codes(tokens: Tokens, idx: np.ndarray) -> np.ndarray:
    """Codes of the kept tokens at flat indices ``idx``: equal codes, equal masked text. Per digit-folded form
    (all of one length, masked at the same spans), the characters outside the masked spans; or the raw text."""
    forms, inverse = np.unique(tokens.form[idx], return_inverse=True)
    if len(forms) > MAX_FORMS or any(not tokens.form_reps[f].isascii() for f in forms):
        return np.asarray(pc.dictionary_encode(tokens.flat.take(pa.array(idx))).indices).astype(np.int64)
    _validity, offs, data = tokens.flat.buffers()
    starts = np.frombuffer(offs, dtype=np.int64)[tokens.flat.offset:][idx]
    buf = np.frombuffer(data, dtype=np.uint8)
    codes = np.zeros(len(idx), dtype=np.int64)
    base = 0
    for j, f in enumerate(forms.tolist()):
        rep = tokens.form_reps[f]
        keep = np.ones(len(rep), dtype=bool)
        for m in MASK_PATTERN.finditer(rep):
            keep[m.start():m.end()] = False
        sel = np.flatnonzero(inverse == j)
        cols = np.flatnonzero(keep)
        if len(cols):
            rows = np.ascontiguousarray(buf[starts[sel][:, None] + cols[None, :]])
            inv = row_codes(rows)
        else:
            inv = np.zeros(len(sel), dtype=np.int64)
        codes[sel] = base + inv
        base += int(inv.max()) + 1 if len(inv) else 0
    return codes


def first_rows(codes: np.ndarray, n: int) -> np.ndarray:
    """The first index of each code in ``codes`` (codes 0..n-1, each present)."""
    first = np.full(n, -1, dtype=np.int64)
    first[codes[::-1]] = np.arange(len(codes) - 1, -1, -1)
    return first


def row_codes(rows: np.ndarray) -> np.ndarray:
    """Codes of equal rows of a 2-d array, in the order of their first rows (one hash over the rows' bytes)."""
    rows = np.ascontiguousarray(rows)
    width = rows.shape[1] * rows.itemsize
    offsets = (np.arange(len(rows) + 1, dtype=np.int64) * width).astype(np.int32)
    blob = pa.Array.from_buffers(pa.binary(), len(rows), [None, pa.py_buffer(offsets), pa.py_buffer(rows)])
    return np.asarray(pc.dictionary_encode(blob).indices).astype(np.int64)


def group_first(cols: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Groups of rows equal in every column: each row's group and each group's first row, groups in order."""
    group = row_codes(np.stack(cols, axis=1))
    return group, first_rows(group, int(group.max()) + 1)


def mine(files: list[FileLines], miner: TemplateMiner) -> list[np.ndarray]:
    """Cluster id of every line: one ``miner.add`` per distinct shape, and per distinct value of its kept tokens
    at positions where the shape's clusters have no wildcard."""
    messages = pa.chunked_array([f.messages for f in files]).combine_chunks()
    sizes = [len(f.messages) for f in files]
    shapes = masked_shapes(messages, miner.masker)
    tokens = shapes.tokens
    n = len(messages)
    cluster = np.full(n, -1, dtype=np.int64)
    order = np.argsort(shapes.shape, kind="stable")
    bounds = np.flatnonzero(np.diff(shapes.shape[order])) + 1
    groups = np.split(order, bounds)
    groups.sort(key=lambda g: int(g[0]))  # shapes in the order of their first lines

    def add(line: int) -> int:
        return miner.add(messages[line].as_py())

    for lines in groups:
        lines = lines[~shapes.slow[lines]]
        if not len(lines):
            continue
        s = int(shapes.shape[lines[0]])
        kept = shapes.shape_kept.get(s)
        if kept is None:
            cluster[lines] = add(int(lines[0]))
            continue
        seen = [add(int(lines[0]))]
        cluster[lines[0]] = seen[0]
        while True:
            templates = [miner.drain.id_to_cluster[c].log_template_tokens for c in set(seen)]
            pos = [p for p in kept if any(p < len(t) and t[p] != "<*>" for t in templates)]
            if not pos:
                open_ = cluster[lines] < 0
                cluster[lines[open_]] = seen[0]
                break
            cols = [residue_codes(tokens, tokens.masked_idx[tokens.line_start[lines] + p]) for p in pos]
            group, first = group_first(cols)
            changed = False
            group_cluster = np.full(len(first), -1, dtype=np.int64)
            for g, row in enumerate(first.tolist()):
                done = cluster[lines[group == g]]
                done = done[done >= 0]
                if len(done):
                    group_cluster[g] = done[0]
                    continue
                cid = add(int(lines[row]))
                group_cluster[g] = cid
                cluster[lines[row]] = cid
                seen.append(cid)
                tpl = miner.drain.id_to_cluster[cid].log_template_tokens
                if any(p < len(tpl) and tpl[p] == "<*>" for p in pos):
                    changed = True
                    break
            if not changed:
                open_ = cluster[lines] < 0
                cluster[lines[open_]] = group_cluster[group[open_]]
                break
    for line in np.flatnonzero(shapes.slow).tolist():
        cluster[line] = add(line)
    out = []
    at = 0
    for size in sizes:
        out.append(cluster[at:at + size])
        at += size
    return out


def job_files(job: Path) -> list[Path]:
    return sorted(p for p in job.rglob("*") if p.is_file() and p.name != "ground_truth.json")


@dataclass
class Result:
    lines: int
    cpu: float
    wall: float
    templates: list[pa.Array]
    files: list[Path]
    stages: dict[str, float]


def write_records(files: list[FileLines], templates: list[pa.Array], out: Path) -> None:
    """One row per line (file, line, time, template, text) to Parquet, compressed as ``l4lite parse`` writes."""
    import pyarrow.parquet as pq

    names = pa.array([str(f.path) for f in files])
    tables = []
    for i, (f, tpl) in enumerate(zip(files, templates, strict=True)):
        text = messages_of(f.buf, f.starts, f.ends, np.zeros(f.n, dtype=np.int64))
        secs = pa.array(f.times, mask=np.isnan(f.times))
        tables.append(pa.table({
            "file": pa.DictionaryArray.from_arrays(pa.array(np.full(f.n, i, dtype=np.int32)), names),
            "line": pa.array(np.arange(1, f.n + 1, dtype=np.int64)),
            "time": pc.cast(pc.multiply(secs, 1e6).cast(pa.int64()), pa.timestamp("us", tz="UTC")),
            "template": pc.dictionary_encode(tpl),
            "text": text,
        }))
    with pq.ParquetWriter(str(out), tables[0].schema, compression="zstd", compression_level=1) as writer:
        for table in tables:
            writer.write_table(table.cast(tables[0].schema))


def run_vector(job: Path, year: int = 2026, out: Path | None = None) -> Result:
    """The whole prototype on a job, timed by stage."""
    stages: dict[str, float] = {}
    cpu0 = time.process_time()
    wall0 = time.perf_counter()
    t = time.process_time()
    files = []
    for path in job_files(job):
        buf, starts, ends = read_file(path)
        head, times = headers(windows(buf, starts, ends), year)
        files.append(FileLines(path, buf, starts, ends, head, times, messages_of(buf, starts, ends, head)))
    stages["read+headers+times"] = time.process_time() - t
    t = time.process_time()
    miner = TemplateMiner()
    clusters = mine(files, miner)
    stages["mask+shape+mine"] = time.process_time() - t
    t = time.process_time()
    final = miner.finalize()
    ids = sorted(final)
    lookup = np.full(max(ids) + 1, -1, dtype=np.int64)
    lookup[ids] = np.arange(len(ids))
    texts = pa.array([final[i][1] for i in ids])
    templates = [texts.take(pa.array(lookup[c])) for c in clusters]
    stages["take"] = time.process_time() - t
    t = time.process_time()
    if out is not None:
        write_records(files, templates, out)
    stages["parquet"] = time.process_time() - t
    cpu = time.process_time() - cpu0
    wall = time.perf_counter() - wall0
    return Result(sum(f.n for f in files), cpu, wall, templates, [f.path for f in files], stages)


def l4lite_cpu(job: Path, out: Path) -> float:
    """CPU seconds (user + sys) of ``l4lite parse JOB -o out --jobs 1``."""
    cmd = [sys.executable, "-m", "l4lite", "parse", str(job), "-o", str(out), "--jobs", "1"]
    before = os.times()
    subprocess.run(cmd, check=True, capture_output=True)
    after = os.times()
    return (after.children_user - before.children_user) + (after.children_system - before.children_system)


def l4lite_templates(job: Path, out: Path) -> dict[tuple[str, int], str]:
    """``l4lite parse --jobs 1`` of the job to JSON lines: the template of each record's first line."""
    l4lite_cpu(job, out)
    templates = {}
    with out.open() as fh:
        for row in fh:
            rec = json.loads(row)
            templates[(rec["file"], rec["line"])] = rec["template"]
    return templates


def compare(job: Path, result: Result, theirs: dict[tuple[str, int], str]) -> tuple[int, int]:
    same = total = 0
    for path, templates in zip(result.files, result.templates, strict=True):
        rel = str(path.relative_to(job))
        mine_ = templates.to_pylist()
        for i, text in enumerate(mine_):
            want = theirs.get((rel, i + 1))
            if want is None:
                continue
            total += 1
            same += want == text
    return same, total


def import_cpu() -> float:
    """CPU seconds of a process that only imports what the prototype uses (its fixed cost as a command)."""
    code = ("import numpy, pyarrow, pyarrow.compute, pyarrow.parquet; import l4lite.mining.miner; "
            "import l4lite.mining.masking")
    before = os.times()
    subprocess.run([sys.executable, "-c", code], check=True)
    after = os.times()
    return (after.children_user - before.children_user) + (after.children_system - before.children_system)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("jobs", nargs="+", type=Path)
    parser.add_argument("--baseline-lines", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-compare", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        one = tmp / "one"
        one.mkdir()
        first = job_files(args.jobs[0])[0]
        with first.open("rb") as fh:
            (one / first.name).write_bytes(fh.readline())
        l4_fixed = min(l4lite_cpu(one, tmp / "one.parquet") for _ in range(args.repeat))
        vec_fixed = min(import_cpu() for _ in range(args.repeat))
        print(f"# fixed CPU s of a command: l4lite parse on a one-line job {l4_fixed:.2f}, "
              f"the prototype's imports {vec_fixed:.2f}")
        print("# lines/s are per core, CPU of the per-line work (a command's fixed cost left out); the last column "
              "is the ceiling of parse --jobs 2 on 1,000,000 lines (two processes, each with the fixed cost)")
        print(f"{'job':<10} {'lines':>8} {'drain3/s':>9} | {'vector/s':>10} {'x drain3':>8} | {'l4lite/s':>9} "
              f"{'x drain3':>8} | {'vector/l4lite':>13} {'commands':>8} | {'same template':>15} | 1M -j2")
        for job in args.jobs:
            base = drain3_baseline(job, args.baseline_lines)
            drain_rate = base.lines / base.cpu
            best = None
            for _ in range(args.repeat):
                r = run_vector(job, out=tmp / "vector.parquet")
                if best is None or r.cpu < best.cpu:
                    best = r
            assert best is not None
            l4_cpu = min(l4lite_cpu(job, tmp / "records.parquet") for _ in range(args.repeat))
            same = total = 0
            if not args.no_compare:
                same, total = compare(job, best, l4lite_templates(job, tmp / "records.jsonl"))
            rate = best.lines / best.cpu
            l4_rate = best.lines / max(l4_cpu - l4_fixed, 1e-9)
            commands = l4_cpu / (vec_fixed + best.cpu)
            million = 1_000_000 / (vec_fixed + 1_000_000 / rate / 2) / drain_rate
            print(f"{job.name:<10} {best.lines:>8,} {drain_rate:>9,.0f} | {rate:>10,.0f} {rate / drain_rate:>7.1f}x | "
                  f"{l4_rate:>9,.0f} {l4_rate / drain_rate:>7.1f}x | {rate / l4_rate:>12.1f}x {commands:>7.1f}x | "
                  f"{same:>7,}/{total:,} | {million:.1f}x")
            print("   stages (cpu s): " + ", ".join(f"{k} {v:.3f}" for k, v in best.stages.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
