"""ComponentDetector: error lines that no signature matched, classified by the component they name.

The rule pack recognises the failures it was written from. A new failure's root line often matches no rule,
yet says plainly what broke: "Input/output error" on a checkpoint write, an Xid the pack does not list, an IB
verb that failed. Such lines become *symptom* findings with the category of the component they name
(``rules.components.component``); cascade lines (watchdog timeouts, broken pipes, teardown) are left out.
Symptoms never make a job an incident on their own: localisation uses them when the job failed but no signature
explains why, and to name the category when the signature that leads is vague.

Error lines come first; one that its own logger rated a warning ("cannot be retrieved", said in passing) is read
by its words and names only, as a warning is. A node's warnings (a trainer's ``TerminateOnNan`` warning, a fabric provider's ``<warn>``
about an address it cannot reach) are read only when none of its error lines names a component, only by the
words and names they hold (the learned model does not guess about one), and only when no other node of the job
printed the same template: a warning every node prints (a launcher setting ``OMP_NUM_THREADS``) is the job's
chatter, not one node's fault.
"""

from __future__ import annotations

import math
import re

from l4lite.detect.base import Detector, Finding
from l4lite.records import Record
from l4lite.rules.advisory import says_harmless
from l4lite.rules.components import component, is_cascade, named_component
from l4lite.rules.word_gate import WordGate
from l4lite.scan.scanner import JobScan, node_key

# Lines that read as errors. A driver's line is not one for being the driver's ("NVRM: loading NVIDIA UNIX x86_64
# Kernel Module" is a boot banner): its words decide.
ERRORISH = re.compile(
    r"\b(?:error|exception|fail(?:ed|ure|s)?|fatal|killed|abort(?:ed)?|cannot|can't|unable|denied|timed out|"
    r"not found|does not exist|lost|refused|corrupt(?:ed)?|truncated|uncorrectable|out of memory|no space|"
    r"segmentation fault|panic|violations?|throttl\w*|fallen off)\b|Xid|Traceback|"
    r"\|\s{0,3}ERR!|ERR!\s{0,3}/\s{0,5}\d+W",  # a field of nvidia-smi's table the GPU did not answer
    re.IGNORECASE,
)
# a word every match of each alternative of ``ERRORISH`` holds (``rules.word_gate``)
ERRORISH_GATE = WordGate(ERRORISH, (
    "error", "exception", "fail", "fatal", "killed", "abort", "cannot", "can't", "unable", "denied", "timed out",
    "not found", "does not exist", "lost", "refused", "corrupt", "truncated", "uncorrectable", "out of memory",
    "no space", "segmentation fault", "panic", "violation", "throttl", "fallen off", "xid", "traceback", "err!"))
FRAME = re.compile(r'^\s*File "[^"\n]{1,400}", line \d+, in ', re.M)  # a Python traceback's frame
# A warning by its words, where the line's level marker is one the ingest does not read ("<warn>", "warn:").
WARNISH = re.compile(r"<warn(?:ing)?>|\bwarn(?:ing)?:", re.IGNORECASE)
# A compiler's or linker's option (``-Wno-error=old-style-cast``, ``-Wno-strict-overflow``, ``-DNDEBUG``,
# ``-fno-math-errno``), as a framework's build-configuration banner lists them (torch's ``Build settings``, printed
# at start-up by MMEngine, mmcv and ``torch.__config__.show()``): flags naming warnings and checks, not words that
# say something failed or which component did.
COMPILER_FLAG = re.compile(r"(?<![\w/.-])-(?:W[A-Za-z][\w+-]*|D[A-Z_]\w*|f[a-z]+(?:-[\w+]+)+|fPIC|m[a-z]+(?==)|X\w+)"
                           r"(?:=[^\s,;]*)?")
MAX_RECORDS = 10
SCORE = 0.25  # below every signature of severity error: a rule that names the fault leads


def _order(r: Record) -> tuple[float, str, int]:
    return (r.time if r.time is not None else math.inf, r.file, r.line)


class ComponentDetector(Detector):
    """One symptom finding per (node, category) from the scan's exemplar records that no rule matched."""

    name = "components"

    def detect(self, scan: JobScan) -> list[Finding]:
        matched = {(h.record.file, h.record.line) for h in scan.hits}
        nodes_of: dict[str, set[str]] = {}
        for tid, node in scan.exemplars:
            nodes_of.setdefault(tid, set()).add(node)
        several = len(scan.node_last) > 1
        groups: dict[tuple[str, str], list[tuple[Record, tuple[str, ...]]]] = {}
        warned: dict[tuple[str, str], list[tuple[Record, tuple[str, ...]]]] = {}
        seen: set[tuple[str, int]] = set()
        for recs in scan.exemplars.values():
            for r in recs:
                key = (r.file, r.line)
                if key in matched or key in seen:
                    continue
                seen.add(key)
                if is_cascade(r.text) or says_harmless(r):
                    continue  # a peer's failure, or a line that says itself it needs no action
                into = groups
                text = COMPILER_FLAG.sub(" ", r.text) if "-" in r.text else r.text
                if r.level not in ("error", "critical") and not ERRORISH_GATE.search(text[:2000]):
                    if r.level == "warning" or WARNISH.search(text[:2000]):
                        alone = several and len(nodes_of.get(r.template_id, ())) == 1
                        found, into = (component(text) if alone else None), warned
                    elif FRAME.search(text[:4000]):
                        # the frames of a traceback cut above its header and below its exception line: only a
                        # name with one meaning in them (a remote-storage client, a checkpoint writer) says what
                        found = named_component(text)
                    else:
                        found = None
                else:  # the learned model guesses only about a line its own logger did not rate a warning
                    found = component(text, learned=r.level != "warning")
                if found is None:
                    continue
                into.setdefault((node_key(r), found.category), []).append((r, found.words))
        erred = {node for node, _ in groups}
        out = [self._finding(category, items, "error") for (_, category), items in groups.items()]
        out += [self._finding(category, items, "warning") for (node, category), items in warned.items()
                if node not in erred]
        out.sort(key=lambda f: _order(f.records[0]))
        return out

    def _finding(self, category: str, items: list[tuple[Record, tuple[str, ...]]], severity: str) -> Finding:
        items.sort(key=lambda it: _order(it[0]))
        records = [r for r, _ in items[:MAX_RECORDS]]
        first = records[0]
        words = ", ".join(dict.fromkeys(w for _, ws in items for w in ws))
        line = "An error line" if severity == "error" else "A warning"
        return Finding(
            detector=self.name, category=category, role="symptom", score=SCORE,
            explain=f"{line} that no known signature matches names the {category.replace('_', ' ')} "
                    f"component ({words[:120]}).",
            node=first.node, rank=first.rank, gpu=first.gpu, time=first.time, severity=severity,
            records=records, count=len(items), data={"component": words, "source": first.source},
        )

