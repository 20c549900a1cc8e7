"""`l4lite report`."""

from __future__ import annotations

import argparse

from l4lite.errors import L4Error


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="(not available yet)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    raise L4Error("'report' is not available in this build")
