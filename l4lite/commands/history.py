"""`l4lite history`."""

from __future__ import annotations

import argparse

from l4lite.errors import L4Error


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("history", help="(not available yet)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    raise L4Error("'history' is not available in this build")
