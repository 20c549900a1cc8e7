"""NVIDIA's Xid catalogue as data: what each Xid code means for a training job.

The rule pack has signatures with hand-written explanations for the Xids seen most; every other code used to
fall to one generic rule ("some Xid"), which could not say whether the GPU, the driver or the application was at
fault. This table gives each catalogued code its category (``gpu_hardware`` for the GPU, its memory, NVLink and
firmware; ``software`` for faults of the application or the driver's handling of it), the role it plays and
its severity, after the resolution buckets of NVIDIA's catalogue
(https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html).

Recent drivers say when an Xid is a consequence of an earlier one ("... caused by previous Xid 74"): such a
line is read as the earlier Xid, since that is what it reports.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class XidEntry:
    code: int
    name: str
    category: str
    role: str
    severity: str


_HW, _SW = "gpu_hardware", "software"
# code: (name, category, role, severity)
_TABLE: dict[int, tuple[str, str, str, str]] = {
    1: ("invalid or unsupported class", _SW, "root", "error"),
    2: ("invalid or corrupted push buffer address", _SW, "root", "error"),
    3: ("invalid or corrupted push buffer stream", _SW, "root", "error"),
    6: ("invalid or corrupted push buffer stream", _SW, "root", "error"),
    7: ("invalid or corrupted push buffer address", _SW, "root", "error"),
    8: ("GPU stopped processing (channel idle timeout)", _SW, "root", "error"),
    9: ("driver error programming GPU", _SW, "root", "error"),
    11: ("invalid or corrupted push buffer stream", _SW, "root", "error"),
    12: ("driver error handling a GPU exception", _SW, "root", "error"),
    13: ("graphics engine exception", _SW, "root", "error"),
    16: ("display engine hung", _HW, "symptom", "warning"),
    31: ("GPU memory page fault", _SW, "root", "error"),
    32: ("invalid or corrupted push buffer stream", _HW, "root", "error"),
    38: ("driver firmware error", _SW, "root", "error"),
    43: ("GPU stopped processing", _SW, "symptom", "warning"),
    44: ("graphics engine fault during context switch", _SW, "root", "error"),
    45: ("preemptive cleanup, due to previous errors", "unknown", "symptom", "info"),
    46: ("GPU stopped processing", _HW, "root", "error"),
    48: ("double-bit ECC error", _HW, "root", "critical"),
    54: ("auxiliary power is not connected to the GPU board", _HW, "root", "critical"),
    56: ("display engine error", _HW, "symptom", "warning"),
    57: ("error programming video memory interface", _HW, "root", "error"),
    58: ("unstable video memory interface detected", _HW, "root", "error"),
    59: ("internal micro-controller error", _HW, "root", "error"),
    60: ("video processor exception", _SW, "root", "error"),
    61: ("internal micro-controller breakpoint/warning", _HW, "root", "error"),
    62: ("internal micro-controller halt", _HW, "root", "critical"),
    63: ("ECC page retirement or row remapping recording event", _HW, "symptom", "warning"),
    64: ("ECC page retirement or row remapper recording failure", _HW, "root", "critical"),
    65: ("video processor exception", _HW, "root", "error"),
    66: ("illegal register access by the driver", _SW, "symptom", "info"),
    67: ("illegal access by the driver", _SW, "symptom", "info"),
    68: ("NVDEC0 exception", _SW, "root", "error"),
    69: ("graphics engine class error", _SW, "root", "error"),
    70: ("copy engine CE3 error", _HW, "root", "error"),
    71: ("copy engine CE4 error", _HW, "root", "error"),
    72: ("copy engine CE5 error", _HW, "root", "error"),
    74: ("NVLink error", _HW, "root", "critical"),
    75: ("copy engine CE6 error", _HW, "root", "error"),
    76: ("copy engine CE7 error", _HW, "root", "error"),
    77: ("copy engine CE8 error", _HW, "root", "error"),
    79: ("GPU has fallen off the bus", _HW, "root", "critical"),
    80: ("corrupted data sent to GPU", _HW, "root", "error"),
    81: ("VGA subsystem error", _HW, "root", "error"),
    83: ("GPU firmware error", _HW, "root", "error"),
    84: ("GPU firmware error", _HW, "root", "error"),
    88: ("GPU memory error", _HW, "root", "error"),
    92: ("high single-bit ECC error rate", _HW, "symptom", "warning"),
    93: ("non-fatal violation of provisioned InfoROM wear limit", _HW, "symptom", "warning"),
    94: ("contained ECC error", _HW, "root", "error"),
    95: ("uncontained ECC error", _HW, "root", "critical"),
    109: ("context switch timeout", _HW, "root", "error"),
    110: ("security fault error", _HW, "root", "error"),
    119: ("GSP RPC timeout", _HW, "root", "error"),
    120: ("GSP error", _HW, "root", "error"),
    121: ("C2C link corrected error", _HW, "symptom", "warning"),
    122: ("SPI PMU RPC read failure", _HW, "root", "error"),
    123: ("SPI PMU RPC write failure", _HW, "root", "error"),
    124: ("SPI PMU RPC erase failure", _HW, "root", "error"),
    125: ("inforom FS failure", _HW, "root", "error"),
    136: ("NVLink link training failed", _HW, "root", "error"),
    137: ("NVLink privilege error", _SW, "root", "error"),
    140: ("ECC unrecovered error", _HW, "root", "critical"),
    143: ("GPU initialization error", _HW, "root", "error"),
    144: ("NVLink SAW error", _HW, "root", "error"),
    145: ("NVLink RLW error", _HW, "root", "error"),
    146: ("NVLink TLW error", _HW, "root", "error"),
    147: ("NVLink TREX error", _HW, "root", "error"),
    148: ("NVLink NVLPW_CTRL error", _HW, "root", "error"),
    149: ("NVLink NETIR error", _HW, "root", "error"),
    150: ("NVLink MSE error", _HW, "root", "error"),
    151: ("key rotation error", _SW, "root", "error"),
    154: ("GPU recovery action changed", _HW, "confirmation", "error"),
    155: ("NVLink software-defined error", _HW, "root", "error"),
    156: ("resource retirement event", _HW, "symptom", "warning"),
    157: ("resource retirement failure", _HW, "root", "error"),
    158: ("GPU fatal timeout", _HW, "root", "error"),
    159: ("CHI non-data error", _HW, "root", "error"),
    160: ("channel retirement event", _HW, "symptom", "warning"),
    161: ("channel retirement failure", _HW, "root", "error"),
    162: ("power smoothing HW circuitry capability change", _HW, "symptom", "info"),
    163: ("power smoothing HW circuitry low lifetime", _HW, "symptom", "warning"),
    164: ("power smoothing HW circuitry lifetime exhausted", _HW, "root", "error"),
    165: ("power smoothing HW circuitry lifetime resource unavailable", _HW, "symptom", "warning"),
    166: ("C2C link uncorrected error", _HW, "root", "error"),
    167: ("PCIe unsupported request", _HW, "root", "error"),
    168: ("NVLink EOM error", _HW, "symptom", "warning"),
}
CATALOGUE: dict[int, XidEntry] = {code: XidEntry(code, *row) for code, row in _TABLE.items()}

_XID = re.compile(r"\bXid \((?:PCI:)?[0-9A-Fa-f:.]{1,40}\):\s*(\d{1,4})\b")
_CAUSED_BY = re.compile(r"caused by (?:a )?previous Xid\s*(\d{1,4})", re.IGNORECASE)


def xid_code(text: str) -> tuple[int | None, bool]:
    """The Xid a line reports and whether it was read from "caused by previous Xid N" (None: no Xid)."""
    m = _CAUSED_BY.search(text)
    if m:
        return int(m.group(1)), True
    m = _XID.search(text)
    return (int(m.group(1)), False) if m else (None, False)


def xid_entry(text: str) -> tuple[XidEntry | None, bool]:
    """The catalogue entry for the Xid a line reports (earlier Xid first), and whether it was a "caused by"."""
    code, caused = xid_code(text)
    if code is None:
        return None, False
    return CATALOGUE.get(code), caused
