"""A job's files merged into one stream (``cat``, ``kubectl logs --prefix``) keep the verdict and the evidence of
the files: the launcher's tee of a rank's error and the rank's own stderr copy are two copies in two streams of the
one file, as they were two copies in two files."""

from __future__ import annotations

from pathlib import Path

from l4lite.api import analyze
from l4lite.options import AnalyzeOptions

JOB = Path(__file__).resolve().parent.parent / "fixtures" / "real_jobs" / "017-lightning-exception"


def _merged(dest: Path, prefix: str) -> Path:
    lines: list[str] = []
    for p in sorted(JOB.rglob("*")):
        if p.is_file() and p.name != "ground_truth.json" and p.suffix != ".json":
            lines += [prefix + x for x in p.read_text().splitlines()]
    out = dest / "job.out"
    out.write_text("\n".join(lines) + "\n")
    return out


def _root_heads(path: Path) -> tuple[str | None, list[str]]:
    inc = analyze([str(path)], AnalyzeOptions()).to_dict()
    return inc["category"], [e["text"].split("\n", 1)[0] for e in inc["evidence"] if e["role"] == "root"]


def test_tee_and_stderr_copies_in_one_file_both_count(tmp_path: Path) -> None:
    for prefix in ("", "[pod/train-worker-0/train] "):
        category, heads = _root_heads(_merged(tmp_path, prefix))
        assert category == "software"
        assert any(h.startswith(prefix + "[default1]:") for h in heads), heads  # the launcher's tee
        assert any(h.startswith(prefix + "[rank1]: Traceback") for h in heads), heads  # the rank's stderr
