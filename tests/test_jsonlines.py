"""JSON lines built by Arrow's kernels are byte for byte what ``json`` writes for a dict per row."""

from __future__ import annotations

import io
import json

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from l4lite.export.jsonlines import encode_columns, write_jsonl_batches, write_lines

DUMPS = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
# every control character, the characters JSON escapes, non-ASCII up to astral planes, DEL and U+2028
TEXT = st.text(alphabet=st.characters(codec="utf-8", categories=None, min_codepoint=0, max_codepoint=0x1F600)
               | st.sampled_from(list('"\\\n\r\t\b\f\x00\x1b\x7f\u2028\u00e9')), max_size=40)


def _expected(rows: list[dict]) -> bytes:
    return "".join(DUMPS(row) + "\n" for row in rows).encode("utf-8")


def _encoded(columns: dict[str, pa.Array]) -> bytes:
    out = io.BytesIO()
    write_lines(encode_columns(columns), out)
    return out.getvalue()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.one_of(st.none(), TEXT), st.one_of(st.none(), st.integers(-2**63, 2**63 - 1)), TEXT),
                max_size=30))
def test_rows_read_as_json_writes_them(rows: list[tuple[str | None, int | None, str]]) -> None:
    columns = {"text": pa.array([r[0] for r in rows], pa.string()), "n": pa.array([r[1] for r in rows], pa.int64()),
               "k\"ey": pa.array([r[2] for r in rows], pa.string())}
    expected = _expected([{"text": t, "n": n, "k\"ey": k} for t, n, k in rows])
    assert _encoded(columns) == expected


@pytest.mark.parametrize("text", ["plain", 'say "hi"', "back\\slash", "a\nb\tc\r", "\x1b[31mred\x1b[0m", "\x00\x1f",
                                  "é ü 中文 😀", "\u2028", "\\\"\n\x01"])
def test_each_escape_alone(text: str) -> None:
    assert _encoded({"t": pa.array([text, None, text])}) == _expected([{"t": text}, {"t": None}, {"t": text}])


def test_slices_and_batches_write_only_their_rows() -> None:
    """A batch that is a slice of a larger one starts its values buffer at an offset: only its rows leave."""
    texts = [f"line {i} \"q\"" for i in range(10)]
    batch = pa.record_batch([pa.array(texts), pa.array(range(10), pa.int32())], names=["text", "i"])
    out = io.BytesIO()
    write_jsonl_batches([batch.slice(3, 4), batch.slice(9, 1), batch.slice(0, 0)], ["i", "text"], out)
    assert out.getvalue() == _expected([{"i": i, "text": texts[i]} for i in (3, 4, 5, 6, 9)])
    out = io.BytesIO()
    write_jsonl_batches([batch], ["text"], out, {"text": lambda b: pa.array(["x"] * b.num_rows)})
    assert out.getvalue() == _expected([{"text": "x"}] * 10)


def test_other_column_types_are_refused() -> None:
    with pytest.raises(TypeError, match="not double"):
        encode_columns({"x": pa.array([1.5])})
    assert _encoded({"t": pa.array(["a\"b"], pa.large_string())}) == _expected([{"t": 'a"b'}])


def test_write_lines_of_a_sliced_array() -> None:
    lines = pa.array([f"{i}\n" for i in range(8)])
    for array in (lines, pa.array([f"{i}\n" for i in range(8)], pa.large_string())):
        out = io.BytesIO()
        write_lines(array.slice(2, 3), out)
        assert out.getvalue() == b"2\n3\n4\n"


def testiso_times_read_as_strftime_writes_them() -> None:
    import datetime

    import numpy as np
    import pyarrow.compute as pc

    from l4lite.export.writers import iso_times

    rng = np.random.default_rng(7)
    stamps = [datetime.datetime(1, 1, 1), datetime.datetime(9999, 12, 31, 23, 59, 59, 999999),
              datetime.datetime(1969, 12, 31, 23, 59, 58, 500000), None]
    times = pa.concat_arrays([pa.array(stamps, pa.timestamp("us", tz="UTC")),
                              pa.array(rng.integers(-2**40, 2**52, 5000), pa.timestamp("us", tz="UTC"))])
    batch = pa.record_batch([times], names=["time"])
    assert iso_times(batch).equals(pc.strftime(times, format="%Y-%m-%dT%H:%M:%SZ"))
    assert iso_times(batch)[0].as_py() == "0001-01-01T00:00:00.000000Z" and iso_times(batch)[3].as_py() is None
