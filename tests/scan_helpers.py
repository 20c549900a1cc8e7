"""Helpers shared by the analyze tests: build records and a tiny template miner without the real ingest."""

from __future__ import annotations

import hashlib
import re

from l4lite.records import Record


class DigitMiner:
    """A stand-in template miner: the template is the message with numbers masked."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}

    def add(self, message: str, key: bytes | None = None) -> int:
        template = re.sub(r"\d+(?:\.\d+)?", "<*>", message)
        return self.ids.setdefault(template, len(self.ids))

    def finalize(self) -> dict[int, tuple[str, str]]:
        return {cid: (hashlib.sha1(t.encode()).hexdigest()[:12], t) for t, cid in self.ids.items()}


def rec(message: str, *, node: str | None = "node1", rank: int | None = None, time: float | None = None,
        line: int = 1, file: str = "node1.log", level: str | None = None, source: str = "trainer",
        end_line: int | None = None, text: str | None = None) -> Record:
    return Record(file=file, line=line, end_line=end_line or line, node=node, rank=rank, gpu=None, source=source,
                  time=time, level=level, message=message, text=text if text is not None else message)
