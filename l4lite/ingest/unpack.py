"""Job archives given on the command line (``job.tar.gz``, ``.tgz``, ``.tar.xz``, ``.tar.bz2``, ``.tar``, ``.zip``)
are unpacked to a temporary folder and read as the job's tree, as they were archived.

A failed job's logs usually reach the on-call engineer as one archive; making them unpack it first costs a step and
the members' write times (kept here: a tar member's mtime is the time its log was last written, which the job's
time facts use). Only archives named explicitly are unpacked: one found while walking a folder may be a checkpoint
or a dataset shard of many gigabytes, and stays skipped with its reason. Members are untrusted: names climbing out
with ``..``, links, devices and other special files are refused (tarfile's ``data`` filter; the same checks for
zip) and counted as skipped; an absolute name is read inside the folder. The folder is removed when the process that made it exits.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import time
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from l4lite.records import Accounting

if TYPE_CHECKING:  # tarfile and zipfile are imported where an archive is met: most jobs are folders of logs
    import zipfile

_TAR_MAGIC_AT = 257
_COMPRESSED_MAGICS = (b"\x1f\x8b", b"BZh", b"\xfd7zXZ\x00")
_ZIP_MAGIC = b"PK\x03\x04"

# Archives unpacked by this process, by (path, size, mtime): the job's files are listed more than once in a run
# (the report and the scan both list them), and each listing must read the same folder.
_UNPACKED: dict[tuple[str, int, int], str] = {}


def archive_kind(path: str) -> str | None:
    """``"tar"`` or ``"zip"`` when ``path`` is a job archive, else None (decided by content, not by name)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(_TAR_MAGIC_AT + 8)
    except OSError:
        return None
    if head.startswith(_ZIP_MAGIC):
        import zipfile

        return "zip" if zipfile.is_zipfile(path) else None
    if head[_TAR_MAGIC_AT:_TAR_MAGIC_AT + 5] == b"ustar" or head.startswith(_COMPRESSED_MAGICS):
        import tarfile

        try:
            return "tar" if tarfile.is_tarfile(path) else None
        except (OSError, EOFError, tarfile.TarError):
            return None
    return None


def unpack(path: str, kind: str, accounting: Accounting, given: str) -> str:
    """The folder holding the archive's members (unpacked once per process); refused members are counted as
    skipped under ``given!member``."""
    st = os.stat(path)
    key = (path, st.st_size, st.st_mtime_ns)
    if key in _UNPACKED and os.path.isdir(_UNPACKED[key]):
        return _UNPACKED[key]
    folder = tempfile.mkdtemp(prefix="l4lite-unpacked-")
    atexit.register(_remove, folder, os.getpid())
    if kind == "tar":
        _untar(path, folder, accounting, given)
    else:
        _unzip(path, folder, accounting, given)
    _UNPACKED[key] = folder
    return folder


def _remove(folder: str, owner: int) -> None:
    """Remove the folder, but only in the process that made it (a forked worker must not remove its parent's)."""
    if os.getpid() == owner:
        shutil.rmtree(folder, ignore_errors=True)


def _untar(path: str, folder: str, accounting: Accounting, given: str) -> None:
    import tarfile

    try:
        with tarfile.open(path, "r:*") as tf:
            for member in tf:
                if member.isdir():
                    continue
                if not member.isfile():
                    accounting.skip_file("archive_member", f"{given}!{member.name}", "not a regular file")
                    continue
                try:
                    tf.extract(member, folder, filter="data")
                except (tarfile.FilterError, OSError) as exc:
                    accounting.skip_file("archive_member", f"{given}!{member.name}", str(exc))
    except (tarfile.TarError, EOFError, OSError) as exc:
        # A truncated archive (a copy cut short) still yields the members before the cut.
        accounting.warn(f"{given}: archive ends early or is damaged ({exc}); members before the damage are read")


def _unzip(path: str, folder: str, accounting: Accounting, given: str) -> None:
    import zipfile

    try:
        with zipfile.ZipFile(path) as zf:
            for info in zf.infolist():
                if info.is_dir():
                    continue
                name = PurePosixPath(info.filename)
                if name.is_absolute() or ".." in name.parts or not name.parts:
                    accounting.skip_file("archive_member", f"{given}!{info.filename}", "name outside the archive")
                    continue
                target = os.path.join(folder, *name.parts)
                try:
                    os.makedirs(os.path.dirname(target), exist_ok=True)
                    with zf.open(info) as src, open(target, "wb") as dst:
                        shutil.copyfileobj(src, dst)
                    mtime = _zip_mtime(info)
                    os.utime(target, (mtime, mtime))
                except (zipfile.BadZipFile, OSError, ValueError) as exc:
                    accounting.skip_file("archive_member", f"{given}!{info.filename}", str(exc))
    except (zipfile.BadZipFile, OSError) as exc:
        accounting.warn(f"{given}: archive is damaged ({exc}); members before the damage are read")


def _zip_mtime(info: zipfile.ZipInfo) -> float:
    """A zip member's stored time (local time, as zip keeps it) as an epoch."""
    return time.mktime((*info.date_time, 0, 0, -1))
