"""The error codes the operating system enumerates, by number, symbolic name and message, as data from its headers.

A failing system call reaches a log in one of three spellings: the number (``[Errno 28]``, ``errno 110``), the
symbolic name (``ENOSPC``, ``(ETIMEDOUT)``) or only the message the C library prints for it (``No space left on
device``). ``rules.exceptions`` maps a number to the category its meaning gives; this module lets the other two
spellings reach the same number, so that a line naming the code in any of its forms gets one answer, and a new
phrasing of a known code needs no new pattern. The tables are the libraries' own enumerations, not excerpts:

- numbers and names: Linux ``include/uapi/asm-generic/errno-base.h`` and ``include/uapi/asm-generic/errno.h``
  (https://github.com/torvalds/linux/blob/master/include/uapi/asm-generic/errno-base.h,
  https://github.com/torvalds/linux/blob/master/include/uapi/asm-generic/errno.h), the numbering of x86-64 and
  arm64 Linux;
- messages: glibc's ``strerror`` texts (``sysdeps/gnu/errlist.h``,
  https://sourceware.org/git/?p=glibc.git;a=blob;f=sysdeps/gnu/errlist.h), which Python's ``OSError`` and most
  C and C++ programs print.

Only codes of the system-call layer are listed; CUDA, NCCL, InfiniBand verbs and signal codes are read by the
rule pack's signatures and ``rules.exceptions``.
"""

from __future__ import annotations

import re

# number -> (symbolic name, glibc message)
ERRNO: dict[int, tuple[str, str]] = {
    1: ("EPERM", "Operation not permitted"),
    2: ("ENOENT", "No such file or directory"),
    3: ("ESRCH", "No such process"),
    4: ("EINTR", "Interrupted system call"),
    5: ("EIO", "Input/output error"),
    6: ("ENXIO", "No such device or address"),
    7: ("E2BIG", "Argument list too long"),
    8: ("ENOEXEC", "Exec format error"),
    9: ("EBADF", "Bad file descriptor"),
    10: ("ECHILD", "No child processes"),
    11: ("EAGAIN", "Resource temporarily unavailable"),
    12: ("ENOMEM", "Cannot allocate memory"),
    13: ("EACCES", "Permission denied"),
    14: ("EFAULT", "Bad address"),
    15: ("ENOTBLK", "Block device required"),
    16: ("EBUSY", "Device or resource busy"),
    17: ("EEXIST", "File exists"),
    18: ("EXDEV", "Invalid cross-device link"),
    19: ("ENODEV", "No such device"),
    20: ("ENOTDIR", "Not a directory"),
    21: ("EISDIR", "Is a directory"),
    22: ("EINVAL", "Invalid argument"),
    23: ("ENFILE", "Too many open files in system"),
    24: ("EMFILE", "Too many open files"),
    25: ("ENOTTY", "Inappropriate ioctl for device"),
    26: ("ETXTBSY", "Text file busy"),
    27: ("EFBIG", "File too large"),
    28: ("ENOSPC", "No space left on device"),
    29: ("ESPIPE", "Illegal seek"),
    30: ("EROFS", "Read-only file system"),
    31: ("EMLINK", "Too many links"),
    32: ("EPIPE", "Broken pipe"),
    33: ("EDOM", "Numerical argument out of domain"),
    34: ("ERANGE", "Numerical result out of range"),
    35: ("EDEADLK", "Resource deadlock avoided"),
    36: ("ENAMETOOLONG", "File name too long"),
    37: ("ENOLCK", "No locks available"),
    38: ("ENOSYS", "Function not implemented"),
    39: ("ENOTEMPTY", "Directory not empty"),
    40: ("ELOOP", "Too many levels of symbolic links"),
    61: ("ENODATA", "No data available"),
    62: ("ETIME", "Timer expired"),
    71: ("EPROTO", "Protocol error"),
    75: ("EOVERFLOW", "Value too large for defined data type"),
    84: ("EILSEQ", "Invalid or incomplete multibyte or wide character"),
    95: ("EOPNOTSUPP", "Operation not supported"),
    97: ("EAFNOSUPPORT", "Address family not supported by protocol"),
    98: ("EADDRINUSE", "Address already in use"),
    99: ("EADDRNOTAVAIL", "Cannot assign requested address"),
    100: ("ENETDOWN", "Network is down"),
    101: ("ENETUNREACH", "Network is unreachable"),
    102: ("ENETRESET", "Network dropped connection on reset"),
    103: ("ECONNABORTED", "Software caused connection abort"),
    104: ("ECONNRESET", "Connection reset by peer"),
    105: ("ENOBUFS", "No buffer space available"),
    106: ("EISCONN", "Transport endpoint is already connected"),
    107: ("ENOTCONN", "Transport endpoint is not connected"),
    108: ("ESHUTDOWN", "Cannot send after transport endpoint shutdown"),
    110: ("ETIMEDOUT", "Connection timed out"),
    111: ("ECONNREFUSED", "Connection refused"),
    112: ("EHOSTDOWN", "Host is down"),
    113: ("EHOSTUNREACH", "No route to host"),
    114: ("EALREADY", "Operation already in progress"),
    115: ("EINPROGRESS", "Operation now in progress"),
    116: ("ESTALE", "Stale file handle"),
    121: ("EREMOTEIO", "Remote I/O error"),
    122: ("EDQUOT", "Disk quota exceeded"),
    125: ("ECANCELED", "Operation canceled"),
}

ERRNO_BY_NAME: dict[str, int] = {name: num for num, (name, _) in ERRNO.items()}
ERRNO_BY_NAME["EWOULDBLOCK"] = 11  # an alias of EAGAIN in errno.h
ERRNO_BY_NAME["EDEADLOCK"] = 35  # an alias of EDEADLK


def errno_of(text: str, known: set[int]) -> tuple[int, str] | None:
    """The first code of ``known`` that ``text`` names by symbolic name or by its C library message, with the
    words that named it; None when it names none. Numbers are read by the caller (``[Errno N]``, ``errno N``)."""
    m = _pattern(frozenset(known)).search(text)
    if m is None:
        return None
    word = m.group(0)
    num = ERRNO_BY_NAME.get(word)
    return (num if num is not None else _BY_MESSAGE[word.lower()]), word


_BY_MESSAGE: dict[str, int] = {msg.lower(): num for num, (_, msg) in ERRNO.items()}
_CACHE: dict[frozenset[int], re.Pattern[str]] = {}


def _pattern(known: frozenset[int]) -> re.Pattern[str]:
    pat = _CACHE.get(known)
    if pat is None:
        names = sorted((n for n, num in ERRNO_BY_NAME.items() if num in known), key=len, reverse=True)
        # the longest message first, so that "Too many open files in system" is not read as "Too many open files"
        msgs = sorted((ERRNO[num][1] for num in known if num in ERRNO), key=len, reverse=True)
        alts = [rf"\b{n}\b" for n in names] + [rf"(?i:\b{re.escape(m)})" for m in msgs]
        pat = re.compile("|".join(alts) or r"(?!)")
        _CACHE[known] = pat
    return pat
