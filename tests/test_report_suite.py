"""Both report paths work for every scenario of the committed simulator suite.

`l4lite analyze JOB --json --html` and `l4lite report INCIDENT.json --logs JOB` must each write a
self-contained page under 2 MB whose verdict matches the job's ground truth.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from l4lite.cli.main import main

SUITE = Path(__file__).resolve().parent.parent / "fixtures" / "suite"
JOBS = sorted(p for p in SUITE.iterdir() if (p / "ground_truth.json").is_file())


@pytest.mark.parametrize("job", JOBS, ids=[p.name for p in JOBS])
def test_analyze_and_report_pages(job: Path, tmp_path: Path) -> None:
    truth = json.loads((job / "ground_truth.json").read_text())
    incident_path, analyzed, postmortem = tmp_path / "i.json", tmp_path / "a.html", tmp_path / "r.html"

    code = main(["analyze", str(job), "--no-store", "--quiet", "--json", str(incident_path), "--html", str(analyzed)])
    assert code == (1 if truth["status"] == "incident" else 0)
    assert main(["report", str(incident_path), "-o", str(postmortem), "--logs", str(job)]) == 0

    incident = json.loads(incident_path.read_text())
    for page in (analyzed, postmortem):
        html = page.read_text(encoding="utf-8")
        assert page.stat().st_size < 2_000_000
        assert "<script src=" not in html and "<link " not in html  # self-contained: nothing fetched
        if truth["status"] == "incident":
            assert "INCIDENT" in html and incident["category"] in html
        else:
            assert "No incident" in html or "no incident" in html
