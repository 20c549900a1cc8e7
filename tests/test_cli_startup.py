"""Process start-up of the command line: only the chosen command's module is imported, and the help is the same
as with every command module imported."""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
from pathlib import Path

import pytest

from l4lite.cli.commands import COMMANDS, summary
from l4lite.cli.main import build_parser, chosen_command, command_module, main


def _loaded_after(argv: list[str]) -> set[str]:
    """The modules a fresh interpreter has imported after running ``l4lite ARGV``."""
    code = (
        "import sys\n"
        "from l4lite.cli.main import main\n"
        "try:\n"
        f"    main({argv!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        "print('\\n'.join(sorted(sys.modules)), file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(done.stderr.split())


def _help(parser_argv: list[str], command: str | None) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        build_parser(command).parse_args(parser_argv)
    return out.getvalue()


def test_top_level_help_imports_no_command_module_nor_numpy() -> None:
    loaded = _loaded_after(["--help"])
    assert "numpy" not in loaded
    assert not {c.module for c in COMMANDS} & loaded
    assert "l4lite.simulate" not in loaded


def test_parse_does_not_import_the_other_commands() -> None:
    loaded = _loaded_after(["parse", "--help"])
    assert "l4lite.cli.parse" in loaded
    others = {c.module for c in COMMANDS if c.name != "parse"}
    assert not others & loaded
    assert "l4lite.simulate" not in loaded


def test_lazy_help_is_the_full_help() -> None:
    assert _help(["--help"], "") == _help(["--help"], None)
    for command in COMMANDS:
        assert _help([command.name, "--help"], command.name) == _help([command.name, "--help"], None)


def test_every_module_registers_its_table_summary() -> None:
    full = " ".join(_help(["--help"], None).split())
    for command in COMMANDS:
        assert f"{command.name} {command.summary}" in full
    assert summary("parse") == COMMANDS[0].summary
    with pytest.raises(KeyError):
        summary("nope")


def test_chosen_command_is_the_first_word_that_is_not_an_option() -> None:
    assert chosen_command(["analyze", "job", "--json"]) == "analyze"
    assert chosen_command(["--help"]) is None
    assert chosen_command([]) is None


def test_unknown_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["bogus"])
    assert exc.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


def test_each_command_is_implemented_by_its_table_module() -> None:
    for command in COMMANDS:
        assert command_module(command.name).__name__ == command.module
    with pytest.raises(KeyError):
        command_module("nope")


def _one_line_job(tmp: Path) -> Path:
    job = tmp / "job"
    (job / "node001").mkdir(parents=True)
    (job / "node001" / "rank0.log").write_text(
        "[2024-07-11 06:08:52,123] [INFO] [rank0]: iteration 100/ 1000 | lm loss: 2.3456E+00\n", encoding="utf-8")
    return job


@pytest.mark.parametrize("suffix", ["jsonl", "csv"])
def test_parse_to_text_formats_does_not_import_pandas(tmp_path: Path, suffix: str) -> None:
    out = tmp_path / f"records.{suffix}"
    loaded = _loaded_after(["parse", str(_one_line_job(tmp_path)), "-o", str(out), "--quiet", "--jobs", "1"])
    assert "2024-07-11T06:08:52.123000Z" in out.read_text(encoding="utf-8")
    assert "pandas" not in loaded


def test_parse_with_a_pool_does_not_import_the_scan(tmp_path: Path) -> None:
    out = tmp_path / "records.jsonl"
    loaded = _loaded_after(["parse", str(_one_line_job(tmp_path)), "-o", str(out), "--quiet", "--jobs", "2"])
    assert '"node":"node001"' in out.read_text(encoding="utf-8")
    assert "l4lite.scale.engine" in loaded
    assert not {"l4lite.scan.job", "l4lite.scan.scanner", "l4lite.rules.pack", "pandas"} & loaded


# Libraries that the parse and analyze paths do not use: scikit-learn only trains the shipped model
# (``evaluate.components_train``), pandas and scipy serve the evaluation and reports, jinja2 the HTML report, Dask
# ``--scheduler``, sqlite3 the history store (``--no-store`` here).
UNUSED = {"sklearn", "scipy", "pandas", "jinja2", "dask", "distributed", "sqlite3"}


def _tops(modules: set[str]) -> set[str]:
    return {m.split(".")[0] for m in modules}


@pytest.mark.parametrize("suffix", ["jsonl", "parquet"])
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_parse_imports_none_of_the_libraries_it_does_not_use(tmp_path: Path, suffix: str, jobs: str) -> None:
    out = tmp_path / f"records.{suffix}"
    loaded = _loaded_after(["parse", str(_one_line_job(tmp_path)), "-o", str(out), "--quiet", "--jobs", jobs])
    assert out.stat().st_size > 0
    assert not _tops(loaded) & UNUSED


def test_analyze_of_a_failed_job_imports_none_of_the_libraries_it_does_not_use(tmp_path: Path) -> None:
    job = Path(__file__).resolve().parent.parent / "fixtures" / "real_jobs" / "001-ddp-exception"
    out = tmp_path / "incident.json"
    loaded = _loaded_after(["analyze", str(job), "--no-store", "--quiet", "--json", str(out)])
    assert '"status": "incident"' in out.read_text(encoding="utf-8") or '"status":"incident"' in out.read_text(
        encoding="utf-8")
    assert not _tops(loaded) & (UNUSED | {"pyarrow"})


def _new_in_worker(setup: str, work: str) -> set[str]:
    """The modules a forked child imports to run ``work`` after its parent ran ``setup`` (the parent's part of a
    ``--jobs N`` run before the pool forks)."""
    code = (
        "import os, sys\n"
        f"{setup}\n"
        "before = set(sys.modules)\n"
        "r, w = os.pipe()\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        f"    {work}\n"
        "    os.write(w, '\\n'.join(sorted(set(sys.modules) - before)).encode() + b'\\n.')\n"
        "    os._exit(0)\n"
        "os.close(w)\n"
        "data = chunk = os.read(r, 65536)\n"
        "while chunk:\n"
        "    chunk = os.read(r, 65536)\n"
        "    data += chunk\n"
        "os.waitpid(pid, 0)\n"
        "assert data.endswith(b'.'), 'the child failed'\n"
        "print(data.decode()[:-1], file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(done.stderr.split())


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="the pool forks only where the system can")
def test_a_forked_parse_worker_imports_nothing_of_its_own(tmp_path: Path) -> None:
    job = _one_line_job(tmp_path)
    setup = (
        "from l4lite.export.parse_engine import SpoolTask, preload_arrow, spool_shard\n"
        "from l4lite.ingest.context import build_context\n"
        "from l4lite.ingest.files import discover\n"
        "from l4lite.records import Accounting\n"
        "preload_arrow('jsonl')\n"
        f"files = discover([{str(job)!r}], Accounting()).files\n"
        "context = build_context(files, None, accounting=Accounting())"
    )
    work = f"spool_shard(SpoolTask(0, tuple(files), context, {str(tmp_path / 's.arrows')!r}))"
    new = _new_in_worker(setup, work)
    assert (tmp_path / "s.arrows").stat().st_size > 0
    assert not {m for m in new if m.startswith(("l4lite", "drain3", "jsonpickle", "numpy", "pyarrow"))}


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="the pool forks only where the system can")
def test_a_forked_analyze_worker_reads_no_rule_file() -> None:
    setup = (
        "import l4lite.rules.pack as pack\n"
        "from l4lite.options import AnalyzeOptions\n"
        "from l4lite.scan.job import load_rules\n"
        "load_rules(AnalyzeOptions())"
    )
    work = "pack.load_file = None; assert len(pack.RulePack.shared()) > 100"  # reading a file would fail
    assert not _new_in_worker(setup, work)
