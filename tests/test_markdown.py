"""``l4lite report INCIDENT.json --markdown``: the ticket text, rendered here by GitHub's own Markdown engine
(cmark-gfm, with its autolink extension and raw HTML allowed) to check that log text adds no markup and no link."""

from __future__ import annotations

import copy
import html
import json
import re
from pathlib import Path

import pytest

from l4lite.cli.main import main
from l4lite.diagnose.incident import Incident
from l4lite.report.markdown import render_markdown

cmarkgfm = pytest.importorskip("cmarkgfm")
from cmarkgfm.cmark import Options  # noqa: E402

FIX = Path(__file__).resolve().parent.parent / "fixtures"
HOSTILE = json.loads((FIX / "report" / "hostile.json").read_text(encoding="utf-8"))
# the tags the Markdown itself makes; anything else in the page came from the log text
ALLOWED = {"h2", "h3", "p", "strong", "em", "code", "pre", "ul", "ol", "li"}


def gfm(markdown: str) -> str:
    return cmarkgfm.github_flavored_markdown_to_html(markdown, options=Options.CMARK_OPT_UNSAFE)


def tags(page: str) -> set[str]:
    return {t.lower() for t in re.findall(r"<\s*/?\s*([A-Za-z][A-Za-z0-9-]*)", page)}


def blocks(page: str) -> list[str]:
    """The text of each code block, unescaped."""
    return [html.unescape(b) for b in re.findall(r"<pre[^>]*><code[^>]*>(.*?)</code></pre>", page, re.S)]


def incident(**changes: object) -> Incident:
    data = copy.deepcopy(HOSTILE)
    data.update(changes)
    return Incident.from_dict(data)


def test_hostile_incident_makes_no_markup_and_no_link(tmp_path: Path) -> None:
    out = tmp_path / "ticket.md"
    assert main(["report", str(FIX / "report" / "hostile.json"), "--markdown", str(out)]) == 0
    assert not (tmp_path / "hostile.html").exists() and not (FIX / "report" / "hostile.html").exists()
    page = gfm(out.read_text(encoding="utf-8"))
    assert tags(page) <= ALLOWED, tags(page) - ALLOWED
    assert "href" not in page and "src=" not in page.replace("src=x", "")
    shown = blocks(page)
    assert len(shown) == 8
    ordered = [e for e in HOSTILE["evidence"] if e["role"] == "root"] + [
        e for e in HOSTILE["evidence"] if e["role"] != "root"]  # root evidence first
    for e in ordered[:8]:
        assert any(e["text"].split("\n")[0] in b for b in shown)  # shown as written, inside code
    assert "\x1b" not in page and "\x00" not in page and "\u2028" not in page


@pytest.mark.parametrize("text", [
    "see http://evil.example/x?a=1 now",
    "www.evil.example/login",
    "mail admin@evil.example please",
    "[click](http://evil.example) ![img](http://evil.example/a.png)",
    "<http://evil.example> <a href='http://evil.example'>x</a>",
    "[ref]: http://evil.example\n[ref]",
    "javascript:alert(1) data:text/html;base64,PHNjcmlwdD4=",
])
def test_links_in_log_text_stay_text(text: str) -> None:
    inc = incident(summary=text, recommendations=[text])
    inc.suspects[0].reasons = [text]
    inc.evidence[0].explain = text
    page = gfm(render_markdown(inc))
    assert "<a " not in page and "<img" not in page and tags(page) <= ALLOWED
    assert "evil.example" in page or "javascript" in page


def test_mentions_issue_refs_and_emphasis_are_escaped() -> None:
    md = render_markdown(incident(summary="@oncall #123 **bold** _it_ ~~gone~~ `code` $x$ | a | b |"))
    summary = md.split("\n")[4]
    assert "\\@oncall" in summary and "\\#123" in summary
    page = gfm(summary)
    assert tags(page) == {"p"}, page  # no strong, em, del, code or table


@pytest.mark.parametrize("text", ["```\n# heading\n```", "````` five", "a ` b `` c ``` d", "~~~\nx\n~~~", "`"])
def test_backticks_in_evidence_cannot_close_its_fence(text: str) -> None:
    inc = incident()
    inc.evidence = inc.evidence[:1]
    inc.evidence[0].text = text + "\n<b>after</b>\n# not a heading"
    inc.suspects[0].node = "node`01``"
    page = gfm(render_markdown(inc))
    pre = blocks(page)
    assert len(pre) == 1
    assert pre[0].rstrip("\n") == inc.evidence[0].text
    assert "<b>" not in page and tags(page) <= ALLOWED
    assert "<code>node`01``</code>" in page


def test_real_incident_reads_as_a_ticket(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inc_path = tmp_path / "incident.json"
    assert main(["analyze", str(FIX / "jobs" / "ib-link-down"), "--no-store", "--quiet", "--json", str(inc_path)]) == 1
    capsys.readouterr()
    assert main(["report", str(inc_path), "--markdown"]) == 0
    md = capsys.readouterr().out
    assert md.startswith("## l4lite") and "node073" in md.split("\n")[0]
    assert "### Suspects" in md and "### What to do now" in md and "### Evidence" in md
    page = gfm(md)
    assert "Link down" in " ".join(blocks(page))
    assert tags(page) <= ALLOWED
    assert not (tmp_path / "incident.html").exists()  # Markdown only unless -o is given
    assert main(["report", str(inc_path), "--markdown", str(tmp_path / "t.md"), "-o", str(tmp_path / "r.html")]) == 0
    assert (tmp_path / "t.md").read_text(encoding="utf-8") == md and (tmp_path / "r.html").exists()


def test_attempts_from_log_text_make_no_markup() -> None:
    """A restarted job's attempts quote nodes and root lines from the logs: still no markup, no link."""
    hostile = "| x | y |\n[a](http://evil.example) <b>b</b> `` ` `` @admin #1"
    inc = incident(attempts=[
        {"attempt": 0, "verdict": False, "status": "incident", "category": "storage", "nodes": [hostile],
         "root": {"file": "0.log", "line": 1, "text": hostile}},
        {"attempt": 1, "verdict": True, "status": "incident", "category": "software", "nodes": ["n1"]}])
    text = render_markdown(inc)
    page = gfm(text)
    assert tags(page) <= ALLOWED, tags(page) - ALLOWED
    assert "href" not in page and "<b>" not in page
    section = page[page.index("Attempts"):]
    items = re.findall(r"<li>(.*?)</li>", section[:section.index("<h3")], re.S)
    assert len(items) == 2 and "attempt 1 (this verdict)" in items[1]
    assert html.unescape(hostile.replace("\n", " ")) in html.unescape(items[0])
