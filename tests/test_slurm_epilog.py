"""contrib/slurm/l4lite-epilog.sh run as Slurm runs an epilog: its environment, a fake ``scontrol`` on PATH,
the job's files on disk and a webhook receiver on 127.0.0.1. No Slurm needed."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from schema_helpers import problems
from test_alerts import local_server

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "contrib" / "slurm" / "l4lite-epilog.sh"
NODES = ["node066", "node073", "node074", "node075"]

SCONTROL = """#!/usr/bin/env bash
# stands in for Slurm's scontrol: `show job ID` and `show hostnames LIST`
if [[ "$1 $2" == "show job" ]]; then
  cat <<EOF
JobId=$2$3 JobName=gpt-2.7b
   UserId=alice(1000) GroupId=alice(1000) MCS_label=N/A
   JobState=$FAKE_STATE Reason=NonZeroExitCode Dependency=(null)
   Requeue=0 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=$FAKE_EXIT
   RunTime=00:15:03 TimeLimit=04:00:00 TimeMin=N/A
   NodeList=node[066,073-075]
   StdErr=$FAKE_OUT
   StdIn=/dev/null
   StdOut=$FAKE_OUT
EOF
elif [[ "$1 $2" == "show hostnames" ]]; then
  printf '%s\\n' node066 node073 node074 node075
else
  exit 1
fi
"""


@pytest.fixture
def cluster(tmp_path: Path) -> dict[str, object]:
    """A finished job as the controller sees it: output file, per-rank logs, the nodes' syslog files."""
    logs = tmp_path / "runs" / "4242" / "logs"
    shutil.copytree(ROOT / "fixtures" / "jobs" / "ib-link-down", logs)
    for node in NODES:
        (tmp_path / "syslog" / node).mkdir(parents=True)
        shutil.move(logs / node / "dmesg.log", tmp_path / "syslog" / node / "kern.log")
    out = tmp_path / "home" / "alice" / "slurm-4242.out"
    out.parent.mkdir(parents=True)
    shutil.copy(logs / "node066" / "launcher.log", out)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "scontrol"
    fake.write_text(SCONTROL)
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    env.update({
        "PATH": f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
        "SLURM_JOB_ID": "4242", "SLURM_JOB_NODELIST": "node[066,073-075]", "SLURM_JOB_NAME": "gpt-2.7b",
        "SLURM_JOB_EXIT_CODE2": "1:0", "FAKE_STATE": "FAILED", "FAKE_EXIT": "1:0", "FAKE_OUT": str(out),
        "L4LITE": f"{sys.executable} -m l4lite",
        "L4LITE_LOGS": f"{tmp_path}/runs/%j/logs",
        "L4LITE_SYSLOG": f"{tmp_path}/syslog/%n/kern.log",
        "L4LITE_STORE": str(tmp_path / "history.sqlite3"),
    })
    return {"env": env, "out": out, "tmp": tmp_path}


def epilog(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=600)


def test_failed_job_is_analysed_recorded_and_posted(cluster: dict) -> None:
    env, out = cluster["env"], cluster["out"]
    with local_server() as server:
        env["L4LITE_WEBHOOK"] = f"http://127.0.0.1:{server.server_address[1]}/hook"
        run = epilog(env)
        bodies = list(server.bodies)
    assert run.returncode == 0, run.stderr
    assert "job 4242: state FAILED: incident" in run.stderr
    incident = json.loads((out.parent / "l4lite-4242.json").read_text())
    assert problems(incident) == []
    assert incident["category"] == "network" and incident["suspects"][0]["node"] == "node073"
    assert any(e["file"].endswith("syslog/node073/kern.log") for e in incident["evidence"])  # syslog was read
    assert (out.parent / "l4lite-4242.html").stat().st_size > 10_000
    assert len(bodies) == 1
    assert bodies[0]["text"].startswith("l4lite Slurm job 4242 (gpt-2.7b) FAILED: network on node073")
    assert "Network fault on node073" in bodies[0]["text"]
    jobs = subprocess.run([sys.executable, "-m", "l4lite", "history", "jobs", "--store", env["L4LITE_STORE"],
                           "--json"], capture_output=True, text=True, timeout=120)
    assert jobs.returncode == 0, jobs.stderr
    assert "node073" in jobs.stdout and "network" in jobs.stdout


def test_timeout_from_scontrol_state_and_wait_status(cluster: dict) -> None:
    env, out = cluster["env"], cluster["out"]
    del env["SLURM_JOB_EXIT_CODE2"]
    env.update({"SLURM_JOB_EXIT_CODE": str(15), "FAKE_STATE": "TIMEOUT", "FAKE_EXIT": "0:15",
                "L4LITE_OUTPUT_DIR": str(cluster["tmp"] / "reports")})
    run = epilog(env)
    assert run.returncode == 0, run.stderr
    assert "state TIMEOUT: incident" in run.stderr
    assert (cluster["tmp"] / "reports" / "l4lite-4242.json").exists()
    assert not (out.parent / "l4lite-4242.json").exists()


@pytest.mark.parametrize("state, code", [("COMPLETED", "0:0"), ("CANCELLED", "0:15")])
def test_jobs_that_did_not_fail_are_left_alone(cluster: dict, state: str, code: str) -> None:
    env, out = cluster["env"], cluster["out"]
    env.update({"FAKE_STATE": state, "FAKE_EXIT": code, "SLURM_JOB_EXIT_CODE2": code})
    run = epilog(env)
    assert run.returncode == 0
    assert f"state {state}" in run.stderr and "not analysed" in run.stderr
    assert not list(out.parent.glob("l4lite-*"))


def test_a_broken_analysis_never_fails_the_epilog(cluster: dict) -> None:
    env = cluster["env"]
    env["L4LITE_STORE"] = str(cluster["tmp"])  # a folder: the history store cannot be opened
    env["L4LITE_WEBHOOK"] = "ftp://nowhere"  # refused before anything is sent
    run = epilog(env)
    assert run.returncode == 0
    assert "l4lite analyze failed (exit 2)" in run.stderr
    assert not list(cluster["out"].parent.glob("l4lite-*"))
