"""How fast does ``l4lite tail`` raise an alert, and what does following a busy job cost?

A writer process appends realistic healthy lines (NCCL INFO, torchrun-prefixed trainer logging, Megatron
progress lines) to N per-rank files at a set total rate, rotates one file by rename halfway through, then writes a
root-cause line (NVRM Xid 79) into another file and keeps writing for a while. The benchmark measures

* latency: from the moment the Xid line was flushed to the alert (the alert's emission time, and the time this
  script saw it in the alert file);
* CPU of the l4lite process (utime + stime from /proc/<pid>/stat) while the writer runs, in % of one core;
* exactness: after the writer stops and tail catches up, tail is stopped with SIGTERM and the lines it committed
  (state file) must equal the lines written, across the rotation.

Also printed: the fraction of routine lines tail kept in its window statistics at the end (``keep``; it sheds
routine lines when it cannot keep up, never lines a rule could match), how many it shed, the longest diagnosis,
and the writer's own CPU.

Each rate is one run; the first (low) rate is the baseline that the others are compared with.

    python benchmarks/tail_latency.py                      # rates 5000 and 50000 lines/s, 16 files
    python benchmarks/tail_latency.py --rates 50000 --seconds 30
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

XID = "NVRM: Xid (PCI:0000:cb:00): 79, pid=1234, name=python, GPU has fallen off the bus."
TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process, from /proc (no psutil)."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def make_line(rank: int, n: int, ts: str, rnd: random.Random, iteration: int) -> str:
    """One healthy line of rank ``rank``; ``n`` is the running line number (varies the numbers)."""
    node = f"gpu-node{rank // 8:03d}"
    local = rank % 8
    k = rnd.random()
    if k < 0.45:
        peer = (rank + 1) % 64
        return (f"{node}:{41000 + rank}:{41100 + n % 13} [{local}] NCCL INFO Channel {n % 32:02d}/0 : "
                f"{rank}[{local}] -> {peer}[{peer % 8}] via P2P/IPC/read")
    if k < 0.75:
        return (f"[rank{rank}]:[{ts}] INFO data_loader.py:142 prefetched shard {n % 4096} "
                f"({1024 + n % 512} samples) in {n % 97}.{n % 10} ms")
    if k < 0.95:
        return (f"[rank{rank}]:[{ts}] DEBUG memory.py:57 allocated {30000 + n % 900} MB, reserved "
                f"{62000 + n % 300} MB, max allocated {61000 + n % 77} MB")
    if k < 0.995:
        return f"[rank{rank}]:[{ts}] INFO checkpointing.py:88 async save queue depth {n % 3}"
    return (f"[rank{rank}]:[{ts}] INFO training.py:1021  iteration {iteration:8d}/  500000 | consumed samples: "
            f"{iteration * 1024:12d} | elapsed time per iteration (ms): {980 + n % 40}.{n % 10} | learning rate: "
            f"2.999E-04 | global batch size:  1024 | lm loss: 2.{4000 + n % 900}E+00 | loss scale: 1.0 | "
            f"grad norm: 0.{310 + n % 60} | number of skipped iterations:   0 | number of nan iterations:   0 |")


def writer(folder: str, files: int, rate: int, seconds: float, root_file: int, rotate_file: int,
           conn: mp.connection.Connection) -> None:
    """Append lines at ``rate`` lines/s in total; rotate one file halfway; write the Xid line at 3/4."""
    rnd = random.Random(7)
    paths = [os.path.join(folder, f"rank{r:02d}.log") for r in range(files)]
    handles = [open(p, "a", encoding="utf-8") for p in paths]  # noqa: SIM115 - closed below
    written = [0] * files
    batch_seconds = 0.01
    start = time.monotonic()
    next_batch = start
    rotated = False
    root_time = None
    iteration = 1000
    n = 0
    while True:
        now = time.monotonic()
        elapsed = now - start
        if elapsed >= seconds:
            break
        if not rotated and elapsed >= seconds / 2:
            handles[rotate_file].close()
            os.rename(paths[rotate_file], paths[rotate_file] + ".1")
            handles[rotate_file] = open(paths[rotate_file], "a", encoding="utf-8")  # noqa: SIM115
            rotated = True
        ts = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S,%f")[:-3]
        per_file = max(1, int(rate * batch_seconds / files))
        iteration += 1
        for r in range(files):
            lines = [make_line(r, n + i, ts, rnd, iteration) for i in range(per_file)]
            n += per_file
            handles[r].write("\n".join(lines) + "\n")
            handles[r].flush()
            written[r] += per_file
        if root_time is None and elapsed >= seconds * 0.75:
            stamp = datetime.now(UTC).strftime("%a %b %d %H:%M:%S %Y")
            handles[root_file].write(f"[{stamp}] {XID}\n")
            handles[root_file].flush()
            root_time = time.time()
            written[root_file] += 1
        next_batch += batch_seconds
        delay = next_batch - time.monotonic()
        if delay > 0:
            time.sleep(delay)
    for h in handles:
        h.close()
    conn.send({"written": sum(written), "root_time": root_time, "seconds": time.monotonic() - start,
               "cpu": time.process_time()})
    conn.close()


def read_state(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def run(rate: int, files: int, seconds: float, poll: float, keep: bool) -> dict:
    work = Path(tempfile.mkdtemp(prefix=f"l4lite-tail-{rate}-"))
    logs = work / "logs"
    logs.mkdir()
    for r in range(files):
        (logs / f"rank{r:02d}.log").write_text("")
    alerts_path = work / "alerts.jsonl"
    state_dir = work / "state"
    state_file = state_dir / "state.json"
    cmd = [sys.executable, "-m", "l4lite", "tail", str(logs / "*.log"), "--alerts", str(alerts_path),
           "--state", str(state_dir), "--poll", str(poll)]
    stderr_path = work / "tail.stderr"
    with open(stderr_path, "w") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, text=True)
    deadline = time.monotonic() + 60
    while not state_file.exists():  # the first checkpoint: imports done, loop running
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"l4lite tail did not start: {stderr_path.read_text()}")
        time.sleep(0.05)
    parent, child = mp.Pipe()
    w = mp.Process(target=writer, args=(str(logs), files, rate, seconds, files // 2 + 1, files // 4, child))
    cpu0, wall0 = cpu_seconds(proc.pid), time.monotonic()
    w.start()
    seen_at = None
    alert = None
    while w.is_alive() or parent.poll():
        if alert is None and alerts_path.exists():
            for line in alerts_path.read_text().splitlines():
                row = json.loads(line)
                if any(e.get("rule", "") and "xid" in e["rule"] for e in row.get("evidence", [])):
                    alert, seen_at = row, time.time()
                    break
        if parent.poll():
            break
        time.sleep(0.002)
    info = parent.recv()
    w.join()
    cpu1, wall1 = cpu_seconds(proc.pid), time.monotonic()
    writer_cpu = round(info["cpu"], 2)
    # Catch up, then stop with SIGTERM (final checkpoint) and compare the committed line count.
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        st = read_state(state_file)
        if st.get("totals", {}).get("lines", 0) >= info["written"]:
            break
        if alert is None and alerts_path.exists():
            for line in alerts_path.read_text().splitlines():
                row = json.loads(line)
                if any(e.get("rule", "") and "xid" in e["rule"] for e in row.get("evidence", [])):
                    alert, seen_at = row, time.time()
        time.sleep(0.1)
    catch_up = time.monotonic() - wall1
    proc.send_signal(signal.SIGTERM)
    try:
        rc = proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        rc = -9
    final = read_state(state_file)
    totals = final.get("totals", {})
    perf = final.get("perf", {})
    alert_time = None
    if alert is not None:
        alert_time = datetime.fromisoformat(alert["time"].replace("Z", "+00:00")).timestamp()
    result = {
        "rate": rate,
        "files": files,
        "written": info["written"],
        "actual_rate": round(info["written"] / info["seconds"]),
        "committed": totals.get("lines"),
        "exact": totals.get("lines") == info["written"],
        "latency_alert": None if alert_time is None else round(alert_time - info["root_time"], 3),
        "latency_seen": None if seen_at is None else round(seen_at - info["root_time"], 3),
        "cpu_percent": round(100 * (cpu1 - cpu0) / (wall1 - wall0), 1),
        "sample_keep_end": perf.get("sample_keep"),
        "sampled_out": totals.get("sampled_out"),
        "diagnose_max": perf.get("diagnose_max"),
        "catch_up_seconds": round(catch_up, 2),
        "exit_code": rc,
        "alerts": len(alerts_path.read_text().splitlines()) if alerts_path.exists() else 0,
        "writer_cpu": round(100 * writer_cpu / info["seconds"], 1),
        "stderr": stderr_path.read_text().strip().splitlines()[-3:],
    }
    if not keep:
        import shutil

        shutil.rmtree(work, ignore_errors=True)
    else:
        result["workdir"] = str(work)
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rates", default="5000,50000", help="comma-separated total lines/s (first = baseline)")
    ap.add_argument("--files", type=int, default=16)
    ap.add_argument("--seconds", type=float, default=16.0, help="writing time per run")
    ap.add_argument("--poll", type=float, default=0.2)
    ap.add_argument("--keep", action="store_true", help="keep the work folders")
    args = ap.parse_args()
    results = [run(int(r), args.files, args.seconds, args.poll, args.keep) for r in args.rates.split(",")]
    print(f"l4lite tail latency benchmark: {args.files} files, {args.seconds:.0f} s of writing per run, "
          f"poll {args.poll} s, {os.cpu_count()} CPUs")
    head = (f"{'rate/s':>8} {'actual/s':>9} {'written':>9} {'committed':>9} {'exact':>5} {'alert s':>8} "
            f"{'seen s':>7} {'cpu %':>6} {'keep':>6} {'shed':>8} {'diag s':>7} {'writer%':>7} {'exit':>4}")
    print(head)
    for r in results:
        print(f"{r['rate']:>8} {r['actual_rate']:>9} {r['written']:>9} {str(r['committed']):>9} "
              f"{'yes' if r['exact'] else 'NO':>5} {str(r['latency_alert']):>8} {str(r['latency_seen']):>7} "
              f"{r['cpu_percent']:>6} {str(r['sample_keep_end']):>6} {str(r['sampled_out']):>8} "
              f"{str(r['diagnose_max']):>7} {r['writer_cpu']:>7} {r['exit_code']:>4}")
    base = results[0]
    for r in results[1:]:
        if base["cpu_percent"] and base["latency_alert"]:
            print(f"rate x{r['rate'] / base['rate']:.0f}: cpu x{r['cpu_percent'] / base['cpu_percent']:.1f}, "
                  f"latency x{(r['latency_alert'] or 0) / base['latency_alert']:.1f}")
    ok = all(r["exact"] and r["latency_alert"] is not None and r["latency_alert"] <= 1.0 and r["exit_code"] == 0
             for r in results)
    print("targets (alert <= 1 s, no loss or duplicate, clean exit):", "met" if ok else "NOT met")
    for r in results:
        if r["stderr"]:
            print(f"rate {r['rate']}: l4lite stderr ends with:", *r["stderr"], sep="\n  ")
        if args.keep:
            print("work folder:", r["workdir"])
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
