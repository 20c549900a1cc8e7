"""What the real-jobs generator records around a job besides torchrun's own files.

- a small memory cgroup (v1, under the generator's own cgroup) in which the kernel's OOM killer ends a rank or a
  DataLoader worker;
- the kernel's lines during the job, read from /dev/kmsg and written as the node's `kern.log` (rsyslog's
  traditional format, as an incident archive holds it);
- a node's stdout and stderr line by line with the moment each line arrived, to write the layouts a Slurm or
  Kubernetes job leaves: one `srun --label` file, or one CRI log file per pod.

Nothing here writes a line a job did not print: it only files the lines, and the kernel's, where the cluster's
log collection would.
"""
import datetime
import os
import re
import threading
import time

MEMORY_ROOT = "/sys/fs/cgroup/memory"


def own_memory_cgroup():
    """The v1 memory cgroup this process runs in (children of it stay within its limits)."""
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            if "memory" in controllers.split(","):
                return path
    raise RuntimeError("no v1 memory cgroup: the OOM jobs need /sys/fs/cgroup/memory")


def make_memory_cgroup(name, limit_bytes):
    """Create <own cgroup>/<name> with memory.limit_in_bytes = limit; returns (folder, cgroup path)."""
    rel = own_memory_cgroup().rstrip("/") + "/" + name
    folder = MEMORY_ROOT + rel
    if os.path.isdir(folder):
        os.rmdir(folder)
    os.mkdir(folder)
    with open(os.path.join(folder, "memory.limit_in_bytes"), "w") as f:
        f.write(str(limit_bytes))
    return folder, rel


def remove_memory_cgroup(folder):
    for _ in range(50):  # the killed task leaves the group a moment after its exit
        try:
            os.rmdir(folder)
            return
        except OSError:
            time.sleep(0.2)


class KernelLog:
    """The kernel's records from the moment of construction (kmsg read from its end)."""

    def __init__(self):
        self.fd = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
        os.lseek(self.fd, 0, os.SEEK_END)

    def records(self):
        """[(seconds since boot, message)] written since construction."""
        out = []
        while True:
            try:
                raw = os.read(self.fd, 8192)
            except BlockingIOError:
                break
            except OSError:  # EPIPE: records were overwritten while we were away; keep reading
                continue
            head, _, rest = raw.decode("utf-8", "replace").partition(";")
            fields = head.split(",")
            message = rest.split("\n", 1)[0]
            out.append((int(fields[2]) / 1e6, message))
        os.close(self.fd)
        return out


OOM_START = re.compile(r"invoked oom-killer")
OOM_END = re.compile(r"Killed process \d+|oom_reaper: reaped process")


def oom_reports(records):
    """The records of the kernel's OOM reports (from 'invoked oom-killer' to its 'Killed process'/
    'oom_reaper' lines); the machine's other kernel lines in the window concern no job process."""
    kept, inside = [], False
    for rec in records:
        if OOM_START.search(rec[1]):
            inside = True
        if inside or OOM_END.search(rec[1]):
            kept.append(rec)
        if OOM_END.search(rec[1]) and "oom_reaper" not in rec[1]:
            inside = False
    return kept


def kern_log_lines(records, host, replace=()):
    """rsyslog's traditional kern.log: `Mmm dd HH:MM:SS host kernel: [ uptime] message`. The wall clock of a
    record is its boot-relative time plus the current wall-minus-monotonic offset (what dmesg -T does)."""
    offset = time.time() - time.monotonic()
    lines = []
    for secs, msg in records:
        for old, new in replace:
            msg = msg.replace(old, new)
        wall = datetime.datetime.fromtimestamp(offset + secs, datetime.UTC)
        stamp = wall.strftime("%b ") + f"{wall.day:2d}" + wall.strftime(" %H:%M:%S")
        lines.append(f"{stamp} {host} kernel: [{secs:12.6f}] {msg}\n")
    return lines


class StreamCapture:
    """Reads a pipe line by line in a thread, keeping (arrival ns, stream, line bytes)."""

    def __init__(self, pipe, stream, sink):
        self.thread = threading.Thread(target=self._run, args=(pipe, stream, sink), daemon=True)
        self.thread.start()

    @staticmethod
    def _run(pipe, stream, sink):
        for line in iter(pipe.readline, b""):
            sink.append((time.time_ns(), stream, line))
        pipe.close()

    def join(self):
        self.thread.join(timeout=30)


def write_srun_label(path, captures):
    """One file as `srun --label` writes it for one task per node: each task's stdout and stderr lines, in the
    order they arrived, prefixed with the task id (`0: `). captures: {task id: [(ns, stream, line)]}; task None holds
    the lines srun and slurmstepd write themselves (no label)."""
    merged = sorted(((ns, task, line) for task, lines in captures.items() for ns, _, line in lines),
                    key=lambda x: x[0])
    with open(path, "wb") as f:
        for _, task, line in merged:  # task None: srun's and slurmstepd's own lines, which carry no task label
            f.write((b"" if task is None else f"{task}: ".encode()) + (line if line.endswith(b"\n") else line + b"\n"))
    return len(merged)


def cri_lines(lines):
    """The CRI log format containerd and CRI-O write for a container: `<RFC3339Nano> <stream> F <line>`."""
    out = []
    for ns, stream, line in sorted(lines, key=lambda x: x[0]):
        sec, frac = divmod(ns, 1_000_000_000)
        stamp = datetime.datetime.fromtimestamp(sec, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S")
        out.append(f"{stamp}.{frac:09d}Z {stream} F ".encode() + line.rstrip(b"\n") + b"\n")
    return out
