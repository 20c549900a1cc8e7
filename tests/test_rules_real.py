"""Real failure excerpts (and paraphrased variants of the same fault kinds), each analysed end to end as a
one-node job with ``pipeline.analyze``.

Targets (issue 4): status "incident" on every failure excerpt and "healthy" on every normal run; the right
category on at least 90 % of the excerpts whose root cause is known. The excerpts are examples, not the test:
the paraphrased file holds other wordings of the same fault kinds (other software versions, hosts, numbers).

A few excerpts are labelled with a root cause that the lines themselves do not show (``KNOWN_MISSES``, with the
reason). They count in the score; every other excerpt with a known root cause must get its category right, so
that any regression fails the test by name.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from l4lite.api import analyze
from l4lite.options import AnalyzeOptions

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
REAL = FIXTURES / "real" / "real-failures.jsonl"
PARAPHRASED = FIXTURES / "rules" / "paraphrased.jsonl"

CATEGORY_OF_ROOT_CAUSE = {
    "gpu_hardware": "gpu_hardware", "oom": "oom", "storage": "storage", "network": "network",
    "numerical_divergence": "numerical", "user_code/config": "user_config", "software_bug": "software",
    "data": "data", "host": "host",
}

KNOWN_MISSES = {
    # The message is a CUDA "illegal memory access"; the maintainer's diagnosis (too little GPU memory) is not in
    # the log. Read as a software fault.
    "codegeex-160-illegal-access-at-setup": "illegal access labelled oom",
    "para-illegal-access-at-setup": "illegal access labelled oom",
    # Xid 62 (micro-controller halt) is a GPU fault per NVIDIA's catalogue; the reporter blames GSP firmware.
    "nvforum-xid62-gsp-watchdog-xid154": "Xid 62 labelled software by the reporter",
    "para-xid62-other-gpu": "Xid 62 labelled software by the reporter",
    # Only the Lustre client's network errors are in the log; the OOM on another host is not.
    "pcluster-2701-fsx-lustre-network-error-after-oom": "storage symptom of an OOM elsewhere",
    "para-lustre-slow-reply": "storage symptom of an OOM elsewhere",
    # Categories that rules once took from these excerpts' labels rather than from their lines (issue 26 removed
    # them): a CUDA OOM at start-up read as a faulty GPU, an IB local-protection error (status 4) read as a
    # configuration fault, a traceback while loading read as storage, launcher teardown read as an OOM.
    "bs13-faulty-gpu-shows-as-oom-at-init": "a CUDA OOM at init labelled gpu_hardware",
    "para-faulty-gpu-oom-set-device": "a CUDA OOM at init labelled gpu_hardware",
    "nccl-928-ib-completion-error-4-nccl-tests": "IB status 4 labelled user_config",
    "para-ib-local-protection-new": "IB status 4 labelled user_config",
    "dddd-trainer-36-corrupt-ckpt-after-disk-full": "a traceback during load labelled storage",
    "para-resume-crash-no-exception-line": "a traceback during load labelled storage",
    "gemma3-finetune-3-resume-corrupt-deepspeed-ckpt": "a traceback during load labelled storage",
    "deepspeed-2946-t5-11b-sigkill-handler": "only launcher teardown in the log, labelled oom",
    # A rank killed by SIGKILL with no kernel line: the OOM killer's usual work, which the incident vocabulary
    # files under host (as the real corpus labels it); this older label says oom.
    "minicpmv-770-exitcode-9-sigkill-at-40pct": "SIGKILL (-9) labelled oom; the vocabulary files it under host",
    "para-torchrun-sigterm-teardown-exit9": "SIGKILL (-9) labelled oom; the vocabulary files it under host",
    "para-deepspeed-exit-9": "SIGKILL (-9) labelled oom; the vocabulary files it under host",
    "para-shell-killed": "SIGKILL (-9) labelled oom; the vocabulary files it under host",
    # Every line is a peer's cascade (remote process exited, connection reset); the network came from a guess of
    # the learned model about NCCL's "Last error:" header alone, which it no longer makes (a line must hold words
    # it knows besides the words of any failure).
    "nccl-2076-connection-reset-ib-issues": "only cascades in the log, labelled network",
    "para-broken-pipe-remote": "only cascades in the log, labelled network",
}

# The held-out real corpus is the judge now (tests/test_corpus_eval.py); these floors keep the excerpts the rules
# were written from from sliding further. Every miss of the real file is a KNOWN_MISSES label the lines do not show
# (27/37 right; the floor went from 0.78 to 0.75 when a traceback through a checkpoint load stopped being storage,
# and to 0.72 (paraphrased 0.82 -> 0.80) when the learned model, trained on these very excerpts, stopped guessing
# about NCCL's "Last error:" header).
SCORE_FLOOR = {REAL.name: 0.72, PARAPHRASED.name: 0.80}


def analyse_excerpt(tmp_path: Path, row: dict) -> tuple[str, str | None]:
    job = tmp_path / row["id"]
    node = job / "node001"
    node.mkdir(parents=True)
    (node / "train.log").write_text("\n".join(row["lines"]) + "\n", encoding="utf-8")
    incident = analyze([str(job)], AnalyzeOptions())
    return incident.status, incident.category


@pytest.mark.parametrize("path", [REAL, PARAPHRASED], ids=lambda p: p.name)
def test_excerpts_end_to_end(tmp_path, path, capsys):
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    status_wrong: list[str] = []
    category_wrong: list[str] = []
    right = scored = 0
    table: list[str] = []
    for row in rows:
        status, category = analyse_excerpt(tmp_path, row)
        want_status = "healthy" if row["kind"] == "normal_run" else "incident"
        if status != want_status:
            status_wrong.append(f"{row['id']}: {status}, want {want_status}")
        want = CATEGORY_OF_ROOT_CAUSE.get(row["root_cause"])
        mark = "  "
        if want is not None:
            scored += 1
            ok = category == want
            right += ok
            mark = "ok" if ok else "XX"
            if not ok and row["id"] not in KNOWN_MISSES:
                category_wrong.append(f"{row['id']}: {category}, want {want}")
        table.append(f"{mark} {row['id']:<52} {status:<8} {category or '-':<12} want {want or '-'}")
    score = right / scored
    with capsys.disabled():
        print(f"\n{path.name}: category right on {right}/{scored} = {score:.1%} of excerpts with a known root "
              f"cause; status right on {len(rows) - len(status_wrong)}/{len(rows)} excerpts")
        for line in table:
            if line.startswith("XX"):
                print("   " + line)
    assert not status_wrong, status_wrong
    assert not category_wrong, category_wrong
    assert score >= SCORE_FLOOR[path.name]
