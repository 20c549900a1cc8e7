"""Security of l4lite against hostile logs and rule files (issue 9, item 3).

- Static: no module under l4lite/ evaluates or unpickles anything (eval, exec, compile, pickle, marshal, shelve,
  jsonpickle, dill, yaml.load, drain3's jsonpickle persistence), runs a shell, imports a module by a computed
  name, or renders HTML without autoescaping; the report templates never switch escaping off.
- User rule patterns are compiled with the ``regex`` module and searched with a timeout: a catastrophic pattern
  against a long line costs a bounded time, end to end through ``l4lite analyze --rules FILE``.
- Output paths are never derived from log content: hostile node names, file names and lines do not create files
  outside the paths the user named.
- Text from logs is escaped in the HTML report (node name, file name, template text, a user rule's explanation
  with a capture from the log) and shown as visible escapes on the terminal.

The report's own escaping of a hand-written hostile incident is tested in a real browser in
test_report_browser.py; here the hostile text comes from log files and rule files through the whole pipeline.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import regex
from html_tags import Tags

from l4lite.cli.main import main
from l4lite.cli.terminal import printable
from l4lite.errors import L4Error
from l4lite.rules.pack import RulePack

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "l4lite"
TEMPLATES = ROOT / "templates"
XID = "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus."

# --------------------------------------------------------------------------------------------------- static
FORBIDDEN_CALLS = {"eval", "exec", "compile", "__import__", "breakpoint", "input"}
FORBIDDEN_MODULES = {"pickle", "cPickle", "_pickle", "marshal", "shelve", "jsonpickle", "dill", "cloudpickle",
                     "yaml", "drain3.template_miner", "drain3.file_persistence", "drain3.redis_persistence",
                     "drain3.kafka_persistence", "code", "codeop", "pty"}
FORBIDDEN_ATTRS = {("os", "system"), ("os", "popen"), ("os", "execv"), ("os", "execvp"), ("os", "execl"),
                   ("os", "spawnl"), ("os", "startfile"), ("tempfile", "mktemp"), ("yaml", "load"),
                   ("yaml", "unsafe_load"), ("yaml", "full_load"), ("pickle", "loads"), ("pickle", "load")}


def modules() -> list[Path]:
    found = sorted(PACKAGE.rglob("*.py"))
    assert len(found) > 30, "the package was not found"
    return found


def violations(path: Path) -> list[str]:
    """What a module does that can run code or objects from data, with line numbers."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    name = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
    out: list[str] = []
    for node in ast.walk(tree):
        where = f"{name}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
            out += [f"{where}: imports {n}" for n in names if n in FORBIDDEN_MODULES or n.split(".")[0]
                    in FORBIDDEN_MODULES - {"drain3"}]
        elif isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Name) and f.id in FORBIDDEN_CALLS:
                out.append(f"{where}: calls {f.id}()")
            if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and (f.value.id, f.attr) in \
                    FORBIDDEN_ATTRS:
                out.append(f"{where}: calls {f.value.id}.{f.attr}()")
            if isinstance(f, ast.Attribute) and f.attr == "import_module" and not (
                    node.args and isinstance(node.args[0], ast.Constant)):
                out.append(f"{where}: imports a module by a computed name")
            for kw in node.keywords:
                if kw.arg == "shell" and not (isinstance(kw.value, ast.Constant) and kw.value.value is False):
                    out.append(f"{where}: runs a shell")
                if kw.arg == "autoescape" and not (isinstance(kw.value, ast.Constant) and kw.value.value is True):
                    out.append(f"{where}: autoescape is not True")
            if isinstance(f, ast.Attribute) and f.attr == "Environment" and not any(
                    kw.arg == "autoescape" for kw in node.keywords):
                out.append(f"{where}: a jinja2 Environment without autoescape")
            if isinstance(f, ast.Name) and f.id == "Markup" and not (
                    node.args and (isinstance(node.args[0], ast.Name) and node.args[0].id == "script"
                                   or isinstance(node.args[0], ast.Call)
                                   and getattr(node.args[0].func, "id", "") == "script_json")):
                out.append(f"{where}: Markup() of something other than the report's own script or script_json()")
    return out


def test_static_checker_finds_what_it_looks_for(tmp_path: Path) -> None:
    """The checker itself: each forbidden construct in a sample module is reported."""
    sample = tmp_path / "sample.py"
    body = ("import pickle\nimport yaml\nfrom drain3.template_miner import TemplateMiner\nimport importlib, os\n"
            "import subprocess, jinja2\nfrom markupsafe import Markup\n"
            "eval('1')\nexec('x=1')\nos.system('ls')\nsubprocess.run('ls', shell=True)\nyaml.load(s)\n"
            "importlib.import_module(name)\njinja2.Environment(loader=None)\nMarkup(line)\n"
            "compile('1', 'f', 'eval')\n")
    sample.write_text(body)
    found = "\n".join(violations(sample))
    for needle in ("imports pickle", "imports yaml", "drain3.template_miner", "calls eval()", "calls exec()",
                   "os.system", "runs a shell", "yaml.load", "computed name", "without autoescape",
                   "Markup()", "calls compile()"):
        assert needle in found, needle


# The one module that may import pickle: the Flight Recorder reader. Its Unpickler subclass refuses every global
# (``find_class`` and ``persistent_load`` only raise) and it never unpickles any other way; test_flight_recorder.py
# runs a hostile dump through it.
PICKLE_READER = PACKAGE / "ingest" / "flight_recorder.py"


def refuses_every_global(path: Path) -> bool:
    """A module whose only use of pickle is a ``pickle.Unpickler`` subclass whose lookups all raise."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    subclasses = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and any(
        isinstance(b, ast.Attribute) and isinstance(b.value, ast.Name) and (b.value.id, b.attr) ==
        ("pickle", "Unpickler") for b in n.bases)]
    if len(subclasses) != 1:
        return False
    methods = {m.name: m for m in subclasses[0].body if isinstance(m, ast.FunctionDef)}
    for name in ("find_class", "persistent_load"):
        body = [b for b in methods[name].body if not isinstance(b, ast.Expr)] if name in methods else []
        if len(body) != 1 or not isinstance(body[0], ast.Raise):
            return False
    uses = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
            and n.value.id == "pickle"}
    return uses <= {"Unpickler", "UnpicklingError"}


def test_no_module_evaluates_or_unpickles_data() -> None:
    found = [v for path in modules() for v in violations(path)
             if not (path == PICKLE_READER and v.endswith("imports pickle") and refuses_every_global(path))]
    assert found == []


def test_the_pickle_reader_check_fails_on_a_plain_unpickler(tmp_path: Path) -> None:
    """The exception above holds only while the subclass refuses: a find_class that looks up is caught."""
    assert refuses_every_global(PICKLE_READER)
    lax = tmp_path / "lax.py"
    lax.write_text(PICKLE_READER.read_text(encoding="utf-8").replace(
        "    def find_class(self, module: str, name: str) -> Any:\n",
        "    def find_class(self, module: str, name: str) -> Any:\n        return super().find_class(module, name)\n"))
    assert not refuses_every_global(lax)
    loads = tmp_path / "loads.py"
    loads.write_text(PICKLE_READER.read_text(encoding="utf-8") + "\nx = pickle.loads(b'')\n")
    assert not refuses_every_global(loads)


def test_report_templates_never_switch_escaping_off() -> None:
    templates = sorted(TEMPLATES.glob("*.j2"))
    assert templates
    for t in templates:
        text = t.read_text(encoding="utf-8")
        assert not re.search(r"\|\s*safe\b|autoescape\s+false|\{%-?\s*autoescape", text), t.name


# --------------------------------------------------------------------------------------------- rule patterns
EVIL_RULES = """
[[rule]]
id = "nested"
pattern = '(a+)+$'
category = "software"
role = "root"
severity = "critical"
explain = "never"

[[rule]]
id = "evil"
pattern = '(a|aa)+$'
category = "software"
role = "root"
severity = "critical"
explain = "never"
"""


def test_user_patterns_are_compiled_with_the_regex_module(tmp_path: Path) -> None:
    user = tmp_path / "user.toml"
    user.write_text(EVIL_RULES)
    pack = RulePack.load([user])
    assert all(isinstance(r.compiled, regex.Pattern) for r in pack.rules)
    assert pack.timeout and pack.timeout <= 1.0


@pytest.mark.parametrize("pattern", ["a{4294967294}", "(?:a{1000}){1000}", "(?:(?:x{100}){100}){100}",
                                     "\\p{L}{99999999}"])
def test_patterns_too_large_to_compile_are_refused_at_once(tmp_path: Path, pattern: str) -> None:
    """The regex module expands counted repetitions when compiling: these took seconds to minutes and gigabytes
    (a{4294967294} ended in a MemoryError traceback). They are refused with a one-line error before compiling."""
    user = tmp_path / "big.toml"
    user.write_text(EVIL_RULES.replace("'(a|aa)+$'", repr(pattern).replace("\\\\", "\\")))
    started = time.monotonic()
    with pytest.raises(L4Error) as err:
        RulePack.load([user])
    assert time.monotonic() - started < 60  # generous: the point is that it does not take minutes
    message = str(err.value)
    assert "\n" not in message and str(user) in message and "'evil'" in message and "too large" in message


def write_job(root: Path, evil_line: str | None = None, xid: bool = True) -> None:
    for n in (1, 2):
        d = root / f"gpu-node-0{n}"
        d.mkdir(parents=True)
        lines = [f"[2024-05-07 01:00:{i:02d}] iteration {i} | lm loss: 2.5 |" for i in range(40)]
        if evil_line is not None:
            lines.insert(20, f"[2024-05-07 01:00:20] {evil_line}")
        (d / "train.log").write_text("\n".join(lines) + "\n")
    if xid:
        (root / "gpu-node-02" / "dmesg.log").write_text(f"[Tue May  7 01:00:30 2024] {XID}\n")


def test_catastrophic_user_pattern_cannot_hang_analyze(tmp_path: Path) -> None:
    """Catastrophic patterns against 'aaaa...b' would take hours to fail without a timeout (``(a|aa)+$`` does
    in the regex module, which defuses the plain ``(a+)+$``); the run must end, with a warning naming the rule."""
    job = tmp_path / "job"
    write_job(job, "a" * 60 + "b")
    user = tmp_path / "evil.toml"
    user.write_text(EVIL_RULES)
    cmd = [sys.executable, "-m", "l4lite", "analyze", "--no-store", "--rules", str(user), str(job),
           "--json", str(tmp_path / "inc.json")]
    started = time.monotonic()
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False,
                         env={**os.environ, "L4LITE_STORE": str(tmp_path / "store.sqlite3")})
    assert res.returncode == 1, res.stderr[-3000:]
    assert "Traceback" not in res.stderr
    inc = json.loads((tmp_path / "inc.json").read_text())
    assert inc["suspects"][0]["node"] == "gpu-node-02"  # the rest of the job is analysed
    warnings = "\n".join(inc["stats"]["warnings"])
    assert "evil" in warnings and str(user) in warnings and "timed out" in warnings
    assert time.monotonic() - started < 300


# --------------------------------------------------------------------------------------------- output paths
HOSTILE_LINES = [
    "../../../../etc/passwd", "/etc/shadow", "..\\..\\windows\\system32", "file:///etc/passwd",
    "$(touch /tmp/l4lite-pwned)", "`touch pwned`", "; rm -rf / #", "%2e%2e%2f%2e%2e%2f",
]


def _snapshot(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def test_output_paths_never_come_from_log_content(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    work = tmp_path / "work"
    job = work / "job"
    write_job(job, "ERROR opening ../../../../tmp/escaped.log failed")
    d = job / "gpu-node-01"
    # node names from lines (NCCL header, syslog host, torchelastic summary host), paths and shell text in lines
    hostile = [f"[2024-05-07 01:00:21] ERROR {h}" for h in HOSTILE_LINES]
    hostile += ["..:1:2 [0] NCCL INFO Init ../../x", "a..b:1:2 [0] NCCL WARN ../../../escape",
                "May  7 01:00:22 ..%2f..%2fetc kernel: x", "[2024-05-07 01:00:23] train.py FAILED",
                "Root Cause (first observed failure):", "[0]:", "  time      : 2024-05-07_01:00:23",
                "  host      : ../../../../tmp/node-escape", "  rank      : 0 (local_rank: 0)",
                "  exitcode  : 1 (pid: 1)", "  error_file: ../../../../etc/passwd", "=" * 40]
    (d / "hostile.log").write_text("\n".join(hostile) + "\n")
    (job / "gpu-node-03..").mkdir()
    (job / "gpu-node-03..").joinpath("a.log").write_text("[2024-05-07 01:00:24] ERROR x\n")
    out = tmp_path / "out"
    out.mkdir()
    scratch = tmp_path / "scratch"  # temporary files go here, where the snapshot sees what is left behind
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    before = _snapshot(tmp_path)
    monkeypatch.chdir(out)
    store = tmp_path / "store.sqlite3"
    code = main(["analyze", str(job), "--store", str(store), "--json", "inc.json", "--html", "report.html"])
    assert code == 1
    assert main(["report", "inc.json", "-o", "again.html"]) == 0
    assert main(["parse", str(job), "-o", "records.parquet"]) == 0
    assert main(["tail", "--once", str(job), "--state", "state", "--alerts", "alerts.jsonl", "--html", "live.html"]) \
        in (0, 1)
    capsys.readouterr()
    created = _snapshot(tmp_path) - before
    allowed = {"out/inc.json", "out/report.html", "out/again.html", "out/records.parquet", "out/alerts.jsonl",
               "out/live.html", "out/state"}
    unexpected = {p for p in created if p not in allowed and not p.startswith(("store.sqlite3", "out/state/"))}
    assert unexpected == set()
    assert not Path("/tmp/escaped.log").exists() and not Path("/tmp/node-escape").exists()
    assert not Path("/tmp/l4lite-pwned").exists()


# --------------------------------------------------------------------------------------------- escaping
HOSTILE_RULES = """
[[rule]]
id = "hostile-explain"
pattern = 'FATAL (?P<what>.+)$'
match = "text"
category = "software"
role = "root"
severity = "critical"
priority = 100
explain = "<b>bold</b> explain <script>alert('rule')</script> saw {what}"
action = "<img src=x onerror=alert('action')> for {what}"
"""
PAYLOAD = "<script>alert(1)</script>\"><img src=x onerror=alert(2)>{{7*7}}"
HOST = "<img src=x onerror=alert(6)>"


def strings(data: object) -> list[str]:
    if isinstance(data, str):
        return [data]
    if isinstance(data, dict):
        return [s for k, v in data.items() for s in strings(k) + strings(v)]
    if isinstance(data, list):
        return [s for v in data for s in strings(v)]
    return []


def test_hostile_text_from_logs_and_rules_is_escaped_in_the_report(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    job = tmp_path / "job"
    write_job(job, xid=False)
    # a hostile file name (in a hostile folder) holding a line that a user rule with a hostile explanation catches
    evil_dir = job / "gpu-node-02" / "<img src=x onerror=alert(3)>"
    evil_dir.mkdir()
    (evil_dir / "<script>alert(4)<\\script>.log").write_text(
        f"[2024-05-07 01:00:25] FATAL {PAYLOAD}\n[2024-05-07 01:00:26] ERROR {PAYLOAD} 42\n")
    # a hostile node name, from the host field of a torchelastic failure summary
    (job / "launcher.out").write_text("\n".join([
        "=" * 60, "train.py FAILED", "-" * 60, "Failures:", "  <NO_OTHER_FAILURES>", "-" * 60,
        "Root Cause (first observed failure):", "[0]:", "  time      : 2024-05-07_01:00:27",
        f"  host      : {HOST}", "  rank      : 3 (local_rank: 3)", "  exitcode  : 1 (pid: 14750)",
        "  error_file: <N/A>", "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
        "=" * 60]) + "\n")
    rules = tmp_path / "hostile.toml"
    rules.write_text(HOSTILE_RULES)
    html_path = tmp_path / "report.html"
    code = main(["analyze", "--no-store", "--rules", str(rules), str(job), "--json", str(tmp_path / "inc.json"),
                 "--html", str(html_path)])
    capsys.readouterr()
    assert code == 1
    inc = json.loads((tmp_path / "inc.json").read_text())
    flat = "\n".join(strings(inc))
    for needle in ("hostile-explain", "alert('rule')", PAYLOAD, HOST, "<script>alert(4)<\\script>.log"):
        assert needle in flat, needle  # the hostile text made it into the incident
    html = html_path.read_text(encoding="utf-8")
    page = Tags()
    page.feed(html)
    tags = [t for t, _ in page.tags]
    assert tags.count("script") == 2 and "img" not in tags
    assert not [(t, k) for t, a in page.tags for k in a if k.startswith("on")]
    text = "".join(page.text)
    for shown in ("<script>alert(1)</script>", "<b>bold</b> explain <script>alert('rule')</script> saw", HOST,
                  "<img src=x onerror=alert(3)>/<script>alert(4)<\\script>.log"):
        assert shown in text, shown  # shown as text, never as markup
    browser_check(html_path, tmp_path)


BROWSER = next((p for p in (shutil.which(n) for n in ("chromium", "chromium-browser")) if p), None)


def browser_check(page: Path, tmp: Path) -> None:
    """The page in headless Chromium: no console message (errors, blocked requests), no script error, no image."""
    if BROWSER is None:
        if os.environ.get("CI") == "true":
            pytest.fail("chromium is not installed, and CI must run the browser checks")
        return
    cmd = [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-dev-shm-usage",
           "--disable-background-networking", "--disable-component-update", f"--user-data-dir={tmp / 'profile'}",
           "--enable-logging=stderr", "--v=0", "--dump-dom", page.as_uri()]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert res.returncode == 0, res.stderr[-2000:]
    assert [line for line in res.stderr.splitlines() if ":CONSOLE" in line] == []
    dom = Tags()
    dom.feed(res.stdout)
    root = next(a for t, a in dom.tags if t == "html")
    assert root.get("data-js-errors") == "[]" and root.get("data-resources") == "0"
    assert "img" not in [t for t, _ in dom.tags]
    assert not [(t, k) for t, a in dom.tags for k in a if k.startswith("on")]


def test_hostile_text_is_shown_as_escapes_on_the_terminal(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    job = tmp_path / "job"
    write_job(job, "x")
    bell = "\x1b]0;owned\x07\x1b[2J\x1b[8m\u202e"
    (job / "gpu-node-02" / "dmesg.log").write_text(f"[Tue May  7 01:00:30 2024] {XID} {bell}\n")
    (job / "gpu-node-01" / "bad\x1b[31mname\nx.log").write_bytes(b"\x7fELF" + bytes(range(256)) * 8)
    code = main(["analyze", "--no-store", str(job)])
    out, err = capsys.readouterr()
    assert code == 1
    for stream in (out, err):
        assert "\x1b" not in stream and "\x07" not in stream and "\u202e" not in stream
    assert "\\x1b]0;owned\\x07" in out  # what the file holds, visibly
    warning = [line for line in err.splitlines() if "bad" in line]
    assert len(warning) == 1 and "bad\\x1b[31mname\\nx.log" in warning[0]
    assert main(["parse", str(job), "-o", str(tmp_path / "r.jsonl")]) == 0
    _, err = capsys.readouterr()
    assert "\x1b" not in err and len([line for line in err.splitlines() if "bad" in line]) == 1
    assert main(["analyze", "--no-store", str(job / "gpu-node-01" / "bad\x1b[2Jnope")]) == 2
    _, err = capsys.readouterr()
    assert "\x1b" not in err and err.count("\n") == 1


def test_printable() -> None:
    assert printable("plain text\twith tab") == "plain text\twith tab"
    assert printable("a\x1b[2Jb\nc\rd\x85e\u202ef\u2028g\x00") == "a\\x1b[2Jb\\nc\\rd\\x85e\\u202ef\\u2028g\\x00"
    assert printable("caf\u00e9 \u4e2d\u6587") == "caf\u00e9 \u4e2d\u6587"
