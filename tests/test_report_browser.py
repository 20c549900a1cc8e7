"""The HTML report in a real headless Chromium: escaping, no console errors, no network, verdict above the fold.

Each test starts Chromium once (about 1-3 s). The page's own script records what the tests read back through
``--dump-dom`` as attributes of <html>: JavaScript errors (window "error" events), CSP violations, the number
of resources loaded, the verdict banner's bounding box and the viewport. Console messages (where Chromium
reports uncaught errors and blocked requests) are read from Chromium's log on stderr.

Without Chromium the tests skip with the reason, except in CI (CI=true), where they fail: CI must run them.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
from pathlib import Path

import pytest
from html_tags import Tags

from l4lite.report.html import load_incident, render_html

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "report"
BROWSER = next((p for p in (shutil.which(n) for n in ("chromium", "chromium-browser")) if p), None)
HOSTILE = ["<script>alert(1)</script>", "\"><img src=x onerror=alert(1)>", "{{ 7*7 }}",
           "javascript:alert(document.cookie)", "</script><script>alert(2)</script>", "<svg onload=alert(3)>",
           "</pre></td></tr></table><h1>owned</h1>"]


@pytest.fixture(scope="module")
def browser() -> str:
    if BROWSER is None:
        if os.environ.get("CI") == "true":
            pytest.fail("chromium is not installed, and CI must run the browser tests (.ci/run installs it)")
        pytest.skip("chromium is not installed (Debian: apt-get install chromium); browser tests skipped")
    return BROWSER


def chromium(browser: str, tmp: Path, url: str, *args: str) -> subprocess.CompletedProcess[str]:
    profile = tmp / "profile"
    profile.mkdir(exist_ok=True)
    cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           "--disable-dev-shm-usage", f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0",
           "--window-size=1366,768", *args, url]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)


def console_messages(stderr: str) -> list[str]:
    """Chromium logs every console message (uncaught errors, CSP blocks, console.*) as INFO:CONSOLE."""
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


def dump(browser: str, tmp: Path, page: Path, fragment: str = "") -> tuple[Tags, dict[str, str | None], list[str]]:
    res = chromium(browser, tmp, page.as_uri() + fragment, "--dump-dom")
    assert res.returncode == 0, res.stderr[-2000:]
    dom = Tags()
    dom.feed(res.stdout)
    root = next(attrs for tag, attrs in dom.tags if tag == "html")
    return dom, root, console_messages(res.stderr)


def test_console_capture_detects_errors_and_blocked_requests(browser: str, tmp_path: Path) -> None:
    """The detector itself: a page with an uncaught error and a blocked image is caught."""
    page = tmp_path / "bad.html"
    page.write_text("<!DOCTYPE html><html><head><meta http-equiv=\"Content-Security-Policy\" content=\""
                    "default-src 'none'; script-src 'unsafe-inline'\"></head><body>"
                    "<img src=\"http://example.invalid/x.png\"><script>throw new Error('boom')</script></body></html>")
    _, _, console = dump(browser, tmp_path, page)
    assert any("boom" in m for m in console)
    assert any("Content Security Policy" in m for m in console)


def test_hostile_log_lines_stay_text_in_the_browser(browser: str, tmp_path: Path) -> None:
    page = tmp_path / "hostile.html"
    render_html(load_incident(FIX / "hostile.json"), page)
    dom, root, console = dump(browser, tmp_path, page)
    assert console == []
    assert root.get("data-js-errors") == "[]" and root.get("data-js-ready") == "true"
    assert root.get("data-csp-violations") is None and root.get("data-resources") == "0"
    tags = [t for t, _ in dom.tags]
    assert tags.count("script") == 2 and "img" not in tags and tags.count("h1") == 1
    assert not [(t, k) for t, a in dom.tags for k in a if k.startswith("on")]
    assert not [a for t, a in dom.tags if t == "a" and not (a.get("href") or "#").startswith("#")]
    text = "".join(dom.text)
    for h in HOSTILE:
        assert h in text, h
    assert "do {{ 7*7 }}" in text


def test_incident_verdict_above_the_fold_and_evidence_filter_from_link(browser: str, tmp_path: Path) -> None:
    page = tmp_path / "gpu.html"
    render_html(load_incident(FIX / "gpu_16node.json"), page, logs=[str(FIX / "gpu_job")])
    dom, root, console = dump(browser, tmp_path, page, "#node=node-07&role=root")
    assert console == []
    assert json.loads(root.get("data-js-errors") or "null") == []
    assert root.get("data-resources") == "0"
    left, top, right, bottom = (int(v) for v in (root.get("data-verdict-box") or "").split(","))
    width, height = (int(v) for v in (root.get("data-viewport") or "").split(","))
    assert width >= 1280 and 0 <= top < bottom <= min(height, 768) and 0 <= left < right <= width
    # The link filtered the evidence table to node-07's root-cause lines.
    assert root.get("data-evidence-visible") == "2"
    rows = [a for t, a in dom.tags if t == "tr" and "data-role" in a]
    shown = [a for a in rows if "hidden" not in a]
    assert len(rows) == 19 and {(a["data-node"], a["data-role"]) for a in shown} == {("node-07", "root")}


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()[:24]
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def test_healthy_report_screenshot(browser: str, tmp_path: Path) -> None:
    page = tmp_path / "healthy.html"
    render_html(load_incident(FIX / "healthy.json"), page)
    shot = tmp_path / "shot.png"
    res = chromium(browser, tmp_path, page.as_uri(), f"--screenshot={shot}", "--hide-scrollbars")
    assert res.returncode == 0, res.stderr[-2000:]
    assert console_messages(res.stderr) == []
    assert _png_size(shot) == (1366, 768)
    assert shot.stat().st_size > 20_000  # a rendered page, not a blank one
