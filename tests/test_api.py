"""The Python API as a user meets it: ``from l4lite import analyze, AnalyzeOptions, Incident, render_html``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import l4lite
from l4lite import AnalyzeOptions, ExecutionOptions, Incident, analyze, render_html

ROOT = Path(__file__).resolve().parent.parent
JOB = ROOT / "fixtures" / "jobs" / "ib-link-down"


def test_a_plain_string_a_path_and_a_list_name_the_same_job() -> None:
    by_str = analyze(str(JOB))
    by_path = analyze(JOB)
    by_list = analyze([JOB], AnalyzeOptions(), ExecutionOptions())
    assert isinstance(by_str, Incident)
    assert by_str.status == by_path.status == by_list.status == "incident"
    assert by_str.category == "network"
    assert by_str.suspects[0].node == by_path.suspects[0].node == by_list.suspects[0].node == "node073"
    assert by_str.stats["files"] == by_list.stats["files"] > 1


def test_render_html_writes_a_report(tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    html = render_html(analyze(JOB), out)
    assert out.read_text() == html and "node073" in html


def test_the_api_names_are_listed_and_unknown_names_fail() -> None:
    assert {"analyze", "AnalyzeOptions", "ExecutionOptions", "Incident", "render_html"} <= set(l4lite.__all__)
    try:
        l4lite.no_such_name  # noqa: B018
    except AttributeError as exc:
        assert "no_such_name" in str(exc)
    else:
        raise AssertionError("an unknown name resolved")


def test_importing_the_package_loads_no_heavy_dependency() -> None:
    code = ("import sys, l4lite, l4lite.cli.main\n"
            "print(sorted(m for m in ('sklearn', 'pandas', 'jinja2', 'drain3') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
