"""Localisation: combine the detectors' findings into one verdict.

Principles (after L4 and NVIDIA's resiliency attribution):

- Root-cause evidence outranks cascades. Among root findings whose scores are close to the best, the earliest
  wins (``primary``): one dead GPU makes every other rank log NCCL watchdog timeouts minutes later.
- A root-cause line that training survived (steady progress well after it, on the node or in the job) is not
  the cause of this failure; it is kept as a symptom.
- The root evidence is the primary's node's root findings (the Xid line, the CUDA error on that node, the link
  down and the IB completion error on that node); root hits on other nodes are shown as cascades.
- Global faults (numerical, user configuration, a rule scoped "global") blame no node; neither does a fault
  whose suspect's last lines every node printed alike and stopped there (``alike.said_alike``). A job-wide
  reading of an error that one process alone printed, while the other nodes only lost it, keeps its node
  (``lone.lone_fault``): nothing shows the others met it.
- Without any root finding, confirmations (a torchelastic summary naming the first failed rank) and cascades
  still make an incident; the suspect is then the named rank's node, the node that stopped first, or the rank
  that lagged behind in the NCCL watchdog's sequence numbers.
- Cascades (``rules.components.is_cascade``) say that a peer went away, not why: they are never root while
  another candidate exists. When the lead is a cascade or a hang inferred from cascades, the lines of the node
  it points at that name a component (a symptom no rule knows, a new template, its own informational lines
  when it failed without an error) are the root and give the category; the inference confirms the node.

``localize`` returns a ``Verdict`` (plain data); ``pipeline`` turns it into the ``Incident``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from l4lite.detect.base import Finding
from l4lite.detect.components import ComponentDetector
from l4lite.diagnose.alike import failed_alike, said_alike
from l4lite.diagnose.allwaited import WHY as ALL_WAITED
from l4lite.diagnose.allwaited import all_ranks_waited, own_timeouts
from l4lite.diagnose.confidence import Basis, basis_of, job_confidence
from l4lite.diagnose.dataframes import read_as_data
from l4lite.diagnose.diverged import diverged_because
from l4lite.diagnose.errorfiles import restates, stated_times
from l4lite.diagnose.evidence import (
    after_kill,
    after_success,
    ended_well_after,
    ends_cascade,
    exit_line,
    global_root_records,
    hit_groups,
    is_companion,
    names_cascade,
    node_root_records,
    signal_line,
    silent_abort,
    strip_summaries,
    tell_together,
)
from l4lite.diagnose.firstfail import earlier_failure
from l4lite.diagnose.lone import lone_fault, one_node_reading, told_on_its_own
from l4lite.diagnose.ncclwarn import warn_payload
from l4lite.diagnose.oddsetup import odd_setup
from l4lite.diagnose.ownlines import its_exception, last_words, node_said, said_apart
from l4lite.diagnose.phasing import failure_time_of, finding_trackers, iteration_of, phase_of
from l4lite.diagnose.pointed import Shown, lagging_node, odd_rank, odd_rank_node, odd_rank_shown
from l4lite.diagnose.restarts import restarted_roots
from l4lite.diagnose.siblings import one_node_logged
from l4lite.diagnose.spatial import node_setup, rank_own
from l4lite.diagnose.stopped import stopped_late
from l4lite.diagnose.storelag import laggard_root
from l4lite.diagnose.suspects import Ranked, rank_suspects
from l4lite.diagnose.threads import dead_thread
from l4lite.diagnose.timeline import (
    CatBlocks,
    around_failure,
    close_to,
    finding_key,
    finished_around,
    named_time,
    survived,
)
from l4lite.diagnose.traits import (
    INFERRED,
    SEVERE,
    alone_errors,
    confirmed_node,
    controller_report,
    inferred,
    is_global,
    placed_lines,
    quoted_elsewhere,
    reads_as_error,
    torn_down,
)
from l4lite.diagnose.wrapped import carried_readings
from l4lite.records import Record
from l4lite.rules.components import LEARNED_WORDS, component, first_failure, is_cascade
from l4lite.scan.scanner import UNKNOWN_NODE, JobScan, is_host, node_key
from l4lite.vocab import GLOBAL_CATEGORIES

ROLE_ORDER = {"root": 0, "confirmation": 1, "cascade": 2, "symptom": 3, "anomaly": 4}
CLOSE_SCORE = 0.2  # root findings within this of the best compete on time
SHOWN = {"root": 10, "confirmation": 3, "cascade": 2, "symptom": 2, "anomaly": 2}  # records shown per finding



@dataclass
class Verdict:
    """What localisation concluded; ``findings`` carry their final roles (``data["role"]``)."""

    status: str
    category: str | None = None
    phase: str | None = None
    scope: str | None = None
    primary: Finding | None = None
    suspects: list[Ranked] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)  # ordered, most important first
    roles: list[str] = field(default_factory=list)  # final role per finding, parallel to ``findings``
    records: list[list[Record]] = field(default_factory=list)  # records shown per finding, parallel too
    failure_time: float | None = None
    alike: list[str] = field(default_factory=list)  # every node, when all failed the same way: a shared cause
    iteration: int | None = None
    confidence: float | None = None  # the job's: how likely node and category are right (``confidence``)
    basis: Basis | None = None  # what ``confidence`` was read from
    notes: list[str] = field(default_factory=list)
    scope_by: str | None = None  # which reading made the verdict job-wide ("category", "rule", "failed_alike"...)


class Localizer:
    """Turns findings into a verdict. Parameters are in ``__init__``, like a detector's."""

    def __init__(self, *, survive_grace: float = 120.0, max_suspects: int = 10,
                 baseline_rates: dict[str, float] | None = None, rate_factor: float = 20.0) -> None:
        self.survive_grace = survive_grace
        self.max_suspects = max_suspects
        # Cross-job filter for signatures: a root line whose template healthy runs of the same setup also
        # print (at a comparable rate) is benign there, so it is not the cause here either.
        self.baseline_rates = dict(baseline_rates or {})
        self.rate_factor = rate_factor

    def _in_baseline(self, scan: JobScan, f: Finding) -> bool:
        # A critical signature (a GPU off the bus, a link down) is never explained away: templates are coarser
        # than rules, and a healthy run's "Link INIT" can share the template of this run's "Link down".
        if not self.baseline_rates or f.detector != "rules" or not f.records or f.severity == "critical":
            return False
        total = max(1, sum(st.count for st in scan.templates.values()))
        for r in f.records:
            base = self.baseline_rates.get(r.template_id)
            stat = scan.templates.get(r.template_id)
            if base is None or stat is None or stat.count / total >= self.rate_factor * base:
                return False
        return True

    def localize(self, scan: JobScan, findings: Sequence[Finding]) -> Verdict:
        findings = list(findings)
        if not any(f.detector == ComponentDetector.name for f in findings):
            findings += ComponentDetector().detect(scan)
        roles = {id(f): f.role for f in findings}
        notes: list[str] = []
        blocks = CatBlocks(scan)  # a concatenation's writers' blocks: where a line's place says nothing
        strip_summaries(findings, roles)
        carried_readings(findings)  # a re-raised error reads as the error it carries
        # Root lines that training survived, and any line the run reported finishing well after, are symptoms of
        # something the job lived through.
        for f in findings:
            if f.detector != "health" and (f.role == "root" and survived(f, scan, self.survive_grace, blocks) or
                                           roles[id(f)] in ("root", "cascade", "confirmation")
                                           and (ended_well_after(f, scan) or finished_around(f, scan)) or
                                           roles[id(f)] == "cascade" and after_success(f, scan)):
                roles[id(f)] = "symptom"
                f.data["survived"] = True
            elif roles[id(f)] in ("root", "cascade", "confirmation") and self._in_baseline(scan, f):
                roles[id(f)] = "symptom"
                f.data["in_baseline"] = True
        restarted_roots(scan, findings, roles)  # a restarted worker group's failure follows the first attempt's
        stopped_late(findings, roles)  # a launcher signalled after the job had failed is its teardown
        roots = [f for f in findings if roles[id(f)] == "root"]
        severe = [f for f in findings if roles[id(f)] in ("cascade", "confirmation") and f.severity in SEVERE]
        if not roots and not severe and len(scan.node_last) <= 1:
            roots = alone_errors(findings, roles)
        if not roots and not severe:
            return self._finish(scan, findings, roles, Verdict(status="healthy", notes=notes))

        verdict = Verdict(status="incident")
        if roots:
            # Signatures (rules, numerical health signals) before inferences (hang, slowdown): a job that
            # stopped or slowed down because of a signed fault is explained by the signature.
            # Ray Train's controller re-raising its workers' errors says that ranks failed, not where: the
            # ranks' own lines, or a stuck rank inferred from its peers, place the fault before it does.
            own = [f for f in roots if not controller_report(f) and not quoted_elsewhere(scan, f)] or roots
            signed = [f for f in own if f.data.get("signal") not in INFERRED and not f.data.get("inferred")] or own
            best = max(f.score for f in signed)
            close = [f for f in signed if f.score >= best - CLOSE_SCORE]
            close = self._witnessed(scan, findings, close)
            # A line that names no node cannot localise a node fault (and its time is often inherited from an
            # earlier line of a merged output); the same fault's attributed line leads instead.
            # untimed roots (tracebacks) in the order their ranks' error files state, before their files' order,
            # when every one of them has its stated time (a copy without one must not lose to its own twin)
            untimed = [f.records[0] for f in close if f.records and finding_key(f)[0] == math.inf]
            stated = stated_times(scan, untimed)
            stated = stated if len(stated) == len({(r.file, r.line) for r in untimed}) else {}
            primary = min(close, key=lambda f: (f.node is None and not is_global(f) and len(scan.node_last) > 1,
                                                _stated_key(f, stated), -f.score))
            # a stuck node inferred from its peers' cascades: what did it say itself? (a rank that left without a
            # word said nothing: its node's other lines are its node-mate's and its agent's cascades)
            if inferred(primary) and not is_global(primary) and primary.data.get("signal") != "vanished_rank":
                for f in findings:  # not a line training outlived (a start-up notice minutes before the stall)
                    if f.detector == ComponentDetector.name and survived(f, scan, self.survive_grace, blocks):
                        f.data["survived"] = True
                said = self._said_root(scan, findings, roles, primary, [f for f in signed if inferred(f)])
                if said is None and (said := dead_thread(findings, primary)) is not None:
                    said.data.pop("survived", None)  # the main thread went on until it waited for this one
                    notes.append("a thread of the stuck process died before it stalled: what it waited for")
                if said is not None:
                    if id(said) not in roles:
                        findings.append(said)
                    primary = said
                    roles[id(said)] = "root"
        else:
            primary = self._primary_without_root(scan, findings, severe)
            # only lost peers: a rank that printed its start-up numbers apart from every other was set up apart
            odd = odd_setup(scan) if names_cascade(primary) else None
            named = odd if odd is not None else self._component_root(findings, roles, primary)
            if odd is not None:
                findings.append(odd)
                roles[id(odd)] = "root"
            if named is not None:  # the job failed and a line no signature knows names the component
                primary = named
            elif names_cascade(primary):
                cascade = primary
                primary = self._anomalous_root(findings, cascade)
                said = node_said(scan, cascade.node, finding_key(cascade)[0], placed_lines(findings)) \
                    if primary is cascade else None
                if said is None and primary is cascade:  # everyone lost a peer: the node that said so apart
                    said = said_apart(findings, roles, cascade.category)
                if said is not None:  # the node the cascade points at named the component in its own words
                    findings.append(said)
                    roles[id(said)] = "root"
                    primary = said
        behind = laggard_root(scan, findings, primary)  # all timed out in the store, one rank on an earlier group
        if behind is not None:
            findings.append(behind)
            roles[id(behind)] = "root"
            primary = behind
        if primary.data.get("signal") == "hang" and primary.node is None:
            lagging = lagging_node(scan, findings)  # a silent hang: the watchdog may still name the node
            if lagging is not None:
                primary.node, primary.data["scope"] = lagging, "node"
        verdict.primary = primary
        verdict.scope = "global" if is_global(primary) else "node"
        if verdict.scope == "global":
            verdict.scope_by = "rule" if primary.data.get("scope") == "global" else "category"
        if verdict.scope == "node" and roots:
            verdict.alike = failed_alike(scan, findings, roles, primary)
            verdict.scope, verdict.scope_by = ("global", "failed_alike") if verdict.alike else (verdict.scope, None)
        # a stall's or a peer's timeout's category is no reading of what the nodes said: not theirs to lend
        lent = "unknown" if inferred(primary) or names_cascade(primary) else primary.category
        shared = said_alike(scan, findings, primary.node, lent) if verdict.scope == "node" else None
        if shared is not None:  # what the suspect said last, every node said: no node to blame
            findings.append(shared.finding)
            roles[id(shared.finding)] = "root"
            verdict.alike, verdict.scope, verdict.scope_by = shared.nodes, "global", "said_alike"
            if inferred(primary) or names_cascade(primary):  # they say more than a peer's timeout
                primary = verdict.primary = shared.finding
        # A lost peer says that it went, not why: the suspect's lines may say
        lost = not roots and primary.detector == "rules" and names_cascade(primary)
        verdict.category = "unknown" if lost else primary.category
        first = earlier_failure(findings, roles, primary) if roots and verdict.scope == "node" else None
        if first is None and (first := warn_payload(scan, primary)) is not None:
            findings.append(first)  # a generic NCCL error read by its rank's WARN line just above it
        if first is not None:  # what the root's node said went wrong just before the root line
            verdict.category, roles[id(first)] = first.category, "root"
        real = [n for n in scan.node_last if is_host(n)]
        if verdict.scope == "node" and primary.node is None and one_node_logged(scan.info, findings, primary, real):
            # One node (or none named): the fault is on the node that logged it.
            primary.node = real[0] if real else (node_key(primary.records[0]) if primary.records else UNKNOWN_NODE)
        if verdict.scope == "node" and primary.node is None:
            named = self._named_node(scan, findings, roles)
            if named is not None:
                primary.node = named
            elif primary.category in ("unknown", "software"):
                verdict.scope, verdict.scope_by = "global", "no_node"
        # Root evidence: the primary's node's root findings; root findings elsewhere become cascades. A traceback
        # every node printed alike keeps its own exception line, which says what failed.
        told = its_exception(findings, roles, primary) if verdict.alike else diverged_because(findings, roles, primary)
        if told is not None and primary.detector == "health":  # the line that says why the numbers went wrong
            verdict.category, roles[id(told)] = told.category, "root"
            if verdict.scope == "global" and not verdict.alike and told_on_its_own(scan, findings, primary, told):
                verdict.scope, verdict.scope_by, primary.node = "node", None, told.node
                notes.append("the numbers followed one process's own error: its node is kept")
        demoted = self._settle_roots(findings, roles, primary, verdict, told)
        silent = bool(primary.data.get("inferred")) and primary.node is not None
        # a generic root whose node named the component just before it (``first``) has its category: the same
        # node's later lines, a learned guess among them, do not read it again
        if first is None and (verdict.category == "unknown" or silent or (
                primary.data.get("fallback") or primary.data.get("generic")) and not primary.data.get("component")):
            # the suspect's own lines may still name the component the generic signature does not; a stuck rank
            # inferred from its silence is "software" only while its node's lines name nothing else that training
            # did not outlive
            for f in findings:
                if silent and f.detector == ComponentDetector.name and f.node == primary.node and \
                        survived(f, scan, self.survive_grace, blocks):
                    f.data["survived"] = True
            named = self._component_root(findings, roles, primary, same_node=True,
                                         near=primary if verdict.category != "unknown" and not silent else None)
            if named is None or named.data.get("component") == LEARNED_WORDS:  # the exception's words before a guess
                named = its_exception(findings, roles, primary) or named
            if named is None and verdict.category == "unknown":  # its own lines near the failure name a component
                said = node_said(scan, primary.node, primary.time or finding_key(primary)[0], placed_lines(findings))
                named = said if said is not None and said.category != "software" else None  # not a stall's words
                findings += [named] if named is not None else []
            if named is not None:
                verdict.category = named.category
                roles[id(named)] = "root"
                # a configuration named by the failing rank's own lines; a guess of the learned model alone
                # does not take the node that printed the line off the list
                if is_global(named) and verdict.scope == "node" and \
                        not (named.detector != "rules" and lone_fault(scan, findings, named)):
                    verdict.scope, verdict.scope_by = "global", "late_component"
            elif silent and torn_down(primary) and primary.data.get("signal") != "vanished_rank":
                # torn down around it: nothing says what held it up (a rank that left with no failure entry of
                # its agent's ended with status 0: its own code's doing, the finding's reading stands)
                verdict.category = primary.category = "unknown"
        if verdict.category == "unknown" and all_ranks_waited(scan):
            verdict.category = "network"
            primary.data["all_waited"] = True
            notes.append(ALL_WAITED)
        local = node_setup(scan, findings, primary) or odd_rank_node(scan, findings, primary) \
            if verdict.scope_by in ("rule", "category") else None
        own = rank_own(scan, findings, primary) if verdict.scope_by in ("rule", "category") and not local else None
        if local is not None or own is not None or verdict.scope_by in ("rule", "category") and \
                one_node_reading(scan, findings, primary, verdict.category):
            verdict.scope, verdict.scope_by, primary.node = "node", None, local or primary.node
            notes.append("the ranks of one node met this setting and the other nodes only lost them (or the other "
                         "ranks named its rank as the one that differs): that node's own setup" if local else f"rank {own.rank} alone met it while a rank of its "
                         "node only lost it: that rank's own fault" if own is not None else
                         "a job-wide reading of one process's error, which the other nodes only lost: its node is kept")
            if own is not None and own.reading is not None and verdict.category in GLOBAL_CATEGORIES:
                verdict.category = own.reading.category
                if own.reading.role != "confirmation":  # a launcher's copy of the error stays a confirmation
                    roles[id(own.reading)] = "root"
            roles.update(demoted)
            self._settle_roots(findings, roles, primary, verdict, told)
        if verdict.scope == "node" and read_as_data(scan, findings, primary, verdict.category, bool(local or own)):
            verdict.category = "data"
            notes.append("raised while one rank (or one node's ranks) loaded samples the others did not: its data")
        tell_together(scan, findings, roles, primary, verdict.scope)
        if verdict.scope == "node" and primary.data.get("all_waited") and primary.node is not None:
            own_timeouts(findings, roles, primary.node)
        if verdict.scope == "node":
            for f in findings:
                if roles[id(f)] in ("symptom", "confirmation") and is_companion(f, primary):
                    roles[id(f)] = "root"
                    f.data["companion"] = True
            ended = exit_line(findings, primary)
            if ended is not None and roles[id(ended)] in ("symptom", "confirmation"):
                roles[id(ended)] = "root"
            sent = signal_line(findings, primary)
            if sent is not None:  # the SIGTERM the stuck worker did not act on: one event with its forced kill
                findings.append(sent)
                roles[id(sent)] = "root"
        trackers, job_events = finding_trackers(scan, primary)
        verdict.phase = phase_of(primary, scan, trackers, job_events, findings)
        verdict.failure_time = failure_time_of(scan, primary, findings)
        verdict.iteration = iteration_of(scan, primary, verdict.failure_time)
        verdict.notes = notes
        verdict = self._finish(scan, findings, roles, verdict)
        verdict.basis = basis_of(verdict.findings, verdict.roles, verdict.primary, verdict.category, verdict.scope)
        verdict.confidence = job_confidence(verdict.basis)
        return verdict

    @staticmethod
    def _settle_roots(findings: list[Finding], roles: dict[int, str], primary: Finding, verdict: Verdict,
                      told: Finding | None) -> dict[int, str]:
        """Root evidence: the primary's node's root findings (a job-wide verdict: those of its category, or the
        line the numbers followed); root findings elsewhere become cascades. Returns the roles it took back."""
        demoted: dict[int, str] = {}
        silent = inferred(primary) or any(roles[id(g)] == "root" and inferred(g) and g.node == primary.node
                                          for g in findings)  # a stuck rank's node: no line of its tells the error
        for f in findings:
            if roles[id(f)] != "root" or f is primary:
                continue
            if verdict.scope == "global":
                same = (is_global(f) or bool(verdict.alike)) and f.category == primary.category or f is told or \
                    bool(f.data.get("nccl_warn"))  # the WARN line a generic NCCL error of the primary's follows
            else:
                same = f.node == primary.node and f.node is not None and not (
                    f.detector == "health" and primary.detector != "health") and f.data.get("signal") not in INFERRED
            if not same and verdict.scope == "node" and controller_report(f):
                # Ray Train's controller reporting the ranks' failure from its own node: the failure's account
                # beside a stuck rank that said nothing of it, a confirmation of a rank's own error line
                if not silent:
                    demoted[id(f)], roles[id(f)] = "root", "confirmation"
                continue
            if same and inferred(f) and not inferred(primary):
                demoted[id(f)], roles[id(f)] = "root", "confirmation"  # the inference agrees on the node
            elif not same:
                demoted[id(f)], roles[id(f)] = "root", "cascade" if f.detector != "health" else "symptom"
        roles[id(primary)] = "root"
        return demoted

    # ------------------------------------------------------------------ no root
    def _primary_without_root(self, scan: JobScan, findings: list[Finding], severe: list[Finding]) -> Finding:
        confirmations = [f for f in severe if f.role == "confirmation"]
        named = [f for f in confirmations if confirmed_node(scan, f)]
        if named:  # the launcher's summary with the earliest first failure names the culprit
            # launchers that failed in the same second (every rank timed out alike): the node a desync names
            out_of_step = {f.node for f in findings if f.detector == "desync" and f.node}
            primary = silent_abort(findings, named) or \
                min(named, key=lambda f: (names_cascade(f), named_time(f),
                                          confirmed_node(scan, f) not in out_of_step, finding_key(f)))
            primary.node = confirmed_node(scan, primary)
        else:
            primary = min(confirmations or severe, key=lambda f: (finding_key(f), -f.score))
        if primary.role == "cascade" or primary.node is None:
            primary.node = lagging_node(scan, findings) or primary.node
        return primary

    def _witnessed(self, scan: JobScan, findings: list[Finding], close: list[Finding]) -> list[Finding]:
        """Among inferences that blame different nodes (a hang read from progress stopping, a stuck rank read from
        who stayed silent), the ones on the node the peers' cascades point at: the ranks that lag in the
        watchdog's sequence numbers, the peer address they say they lost, the one node that reported no loss.
        Each inference alone sees one side; the witnesses' lines say which node went away. Unchanged when the
        candidates agree, when any is a signature, or when the cascades point at none of them."""
        nodes = {f.node for f in close}
        if len(nodes) < 2 or not all(inferred(f) for f in close):
            return close
        pointed = lagging_node(scan, findings)
        chosen = [f for f in close if pointed is not None and f.node == pointed]
        return chosen or close

    @staticmethod
    def _component_root(findings: list[Finding], roles: dict[int, str], primary: Finding,
                        same_node: bool = False, near: Finding | None = None,
                        around: Finding | None = None) -> Finding | None:
        """The first line that says what broke when no signature does: a component finding (an error line no rule
        knows, naming a component) or a rule's symptom that is not a cascade, on the primary's node when there is
        one there, the earliest first; None when there is none."""
        named = [f for f in findings if roles.get(id(f)) == "symptom" and f.severity in ("critical", "error", "warning")
                 and not f.data.get("survived") and not f.data.get("in_baseline") and f.category != "unknown"
                 and not f.data.get("restarted")
                 and (f.detector == ComponentDetector.name or (f.detector == "rules" and f.records
                                                               and not is_cascade(f.records[0].text)))
                 and not ends_cascade(f, findings)]
        roots = [r for g in findings if roles.get(id(g)) == "root" for r in g.records]
        named = [f for f in named if not restates(f, roots)]  # a root's own error file says nothing new
        if near is not None:  # close to a given finding: the same failure, not an earlier warning
            named = [f for f in named if close_to(f, near)]
        if around is not None:  # around an inferred failure time (a hang's stall)
            named = [f for f in named if around_failure(f, around)]
        if primary.node is not None:
            own = [f for f in named if f.node == primary.node]
            named = own if (own or same_node) else named
        if not named:
            return None
        # a guess of the learned model is the last resort: a line whose words name the component comes first
        return min(named, key=lambda f: (f.data.get("component") == LEARNED_WORDS,
                                         f.detector != ComponentDetector.name and f.severity == "warning",
                                         finding_key(f), -f.score))

    def _said_root(self, scan: JobScan, findings: list[Finding], roles: dict[int, str], primary: Finding,
                   inferred_roots: list[Finding]) -> Finding | None:
        """The line a node inferred to be at fault (the one silent while its peers timed out) printed itself.

        Its peers' watchdog timeouts and SIGTERMs say only that it went away; a line of its own that names a
        component (an IB async event, a DCGM failure, an ECC error) says why. The inferred node's own lines come
        first, then those of another node the inference named; a component line on a node the inference did not
        name counts only when it is the one node that printed such a line. Without any, the inferred node's
        lines new to the job near the failure (the filters' anomalies) that read as errors stand in; its
        informational lines are not read here (a rank a hang stopped printed its start-up banners and
        configuration dumps moments before). Without those either, its last lines of its own near the stall
        (``ownlines.last_words``) say where it stopped.
        """
        named = self._component_root(findings, roles, primary, around=primary)
        if named is not None and named.node != primary.node:
            nodes = {f.node for f in inferred_roots}
            others = {f.node for f in findings if roles.get(id(f)) == "symptom"
                      and f.detector == ComponentDetector.name and not f.data.get("survived")}
            if named.node not in nodes and (len(others) > 1 or named.detector != ComponentDetector.name):
                named = None  # a signature on a peer (its abort, its launcher's report) is that peer's own story
        if named is not None:
            return named
        first = self._anomalous_root(findings, primary, telling=True)
        if first is primary:  # its own error lines, naming nothing, still say more than its peers' timeouts
            if primary.data.get("killed_busy"):
                return None  # but not more than its agent's SIGTERM of it while it was busy
            first = self._anomalous_root(findings, primary, telling=True, named=False)
            if first is not primary and first.category == "unknown" and torn_down(primary):
                return first if around_failure(first, primary) else self._last_words(scan, findings, primary)
        if first is primary or not around_failure(first, primary) or after_kill(first, primary):
            return self._last_words(scan, findings, primary)
        if first.category == "unknown":
            first.category = primary.category
        return first

    @staticmethod
    def _last_words(scan: JobScan, findings: list[Finding], primary: Finding) -> Finding | None:
        """The stuck node's last lines of its own, unless lines about the stuck rank say more; their
        category is the hang's, or none when the job was merely torn down around it."""
        if primary.data.get("killed_busy") or primary.data.get("why"):
            return None  # lines that name the stuck rank (a desync report, its progress stopping first) say more
        said = last_words(scan, primary.node, primary.time, placed_lines(findings))
        if said is not None and not torn_down(primary) and not said.data.get("component"):
            said.category = primary.category
        return said

    @staticmethod
    def _anomalous_root(findings: list[Finding], cascade: Finding, telling: bool = False,
                        named: bool = True) -> Finding:
        """A cascade says a peer went away, not why: on the node it points at, the lines new to the job near the
        failure (the filters' anomalies) are what that node said instead; their words may name the component.

        ``telling``: only lines that read as an error, name a component and that no rule has placed already (a
        hang's node also prints the launcher's start-up banner, new to a short job, and the launcher's report of
        its killed ranks)."""
        node = cascade.node
        # a line naming the rank that failed points at that rank's lines (and its node's), not its neighbours'
        rank = cascade.data.get("failed_rank")
        placed = placed_lines(findings) if telling else set()
        new = [f for f in findings if f.role == "anomaly" and f.detector == "filters" and node is not None
               and f.node == node and (rank is None or f.rank is None or str(f.rank) == str(rank))
               and f.records and not is_cascade(f.records[0].text)
               and (not telling or any(reads_as_error(r, named) and (r.file, r.line) not in placed for r in f.records))]
        if not new:
            return cascade
        first = min(new, key=finding_key)
        named = component("\n".join(r.text for r in first.records), learned=True)
        first.category = named.category if named is not None else "unknown"
        if named is not None and named.words == (LEARNED_WORDS,):  # a guess: it makes no fault job-wide
            first.data["component"] = LEARNED_WORDS
        return first

    def _named_node(self, scan: JobScan, findings: list[Finding], roles: dict[int, str]) -> str | None:
        named = [f for f in findings if roles[id(f)] == "confirmation" and confirmed_node(scan, f)]
        if named:
            return confirmed_node(scan, min(named, key=lambda f: (named_time(f), finding_key(f))))
        for f in findings:
            if f.detector == "health" and f.data.get("signal") == "hang" and f.node:
                return f.node
        return lagging_node(scan, findings)

    # ------------------------------------------------------------------ suspects and ordering
    def _finish(self, scan: JobScan, findings: list[Finding], roles: dict[int, str], verdict: Verdict) -> Verdict:
        primary = verdict.primary
        ordered = sorted(findings, key=lambda f: (f is not primary, ROLE_ORDER.get(roles[id(f)], 9),
                                                 finding_key(f), -f.score))
        verdict.findings = ordered
        verdict.roles = [roles[id(f)] for f in ordered]
        groups = hit_groups(scan)
        incident = verdict.status == "incident"
        chosen = global_root_records([f for f, role in zip(ordered, verdict.roles, strict=True) if role == "root"]) \
            if incident and verdict.scope == "global" else {}
        # Cascade lines are never root evidence while a root finding offers another line.
        said = incident and any(not is_cascade(r.text) for f, role in zip(ordered, verdict.roles, strict=True)
                                if role == "root" for r in f.records)
        for f, role in zip(ordered, verdict.roles, strict=True):
            if role == "root" and incident:
                recs = chosen[id(f)] if verdict.scope == "global" else node_root_records(f, groups, scan)
                # a stuck rank is told by the lines about it, a worker that ignored SIGTERM by that signal too,
                # a rank alone in a collective by its own timeout naming that collective
                if said and f.data.get("signal") != "stuck_rank" and not f.data.get("signalled") \
                        and not f.data.get("timeout_is_proof"):
                    recs = [r for r in recs if not is_cascade(first_failure(r.text) if f is primary else r.text)]
            else:
                recs = f.records[: SHOWN.get(role, 2)]
            verdict.records.append(recs)
        if verdict.status == "incident" and verdict.scope == "node":
            verdict.suspects = rank_suspects(ordered, verdict.roles, primary, verdict.category, self.max_suspects)
            if primary is not None and (odd := odd_rank(ordered, primary)) is not None:
                verdict.findings, verdict.roles, verdict.records = odd_rank_shown(
                    Shown(verdict.findings, verdict.roles, verdict.records), primary, odd, SHOWN["confirmation"])
        return verdict


def _stated_key(f: Finding, stated: dict[tuple[str, int], float]) -> tuple[float, float, float, str, int]:
    """``finding_key`` with the time an untimed root's error file states (``stated_times``) before its file, then
    the time its record inherits from its file's last stamped line: of two tracebacks in two processes' own files,
    the one printed after its process's earlier lines came first, whatever the files' names."""
    t, file, line = finding_key(f)
    inherited = f.records[0].time if t == math.inf and f.records and f.records[0].time is not None else math.inf
    return t, stated.get((file, line), math.inf), inherited, file, line


def localize(scan: JobScan, findings: Sequence[Finding], **kwargs: Any) -> Verdict:
    """Convenience wrapper: ``Localizer(**kwargs).localize(scan, findings)``."""
    return Localizer(**kwargs).localize(scan, findings)
