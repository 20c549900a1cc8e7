"""Command line: a thin layer that parses flags and calls the pipeline. Nothing below it prints or exits.

Exit codes: 0 healthy (or command succeeded), 1 incident found, 2 usage or input error.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from types import ModuleType

from l4lite.cli.terminal import printable
from l4lite.errors import L4Error
from l4lite.version import __version__


def _command_modules() -> list[ModuleType]:
    # Imported lazily so that `l4lite parse` does not pay for pandas or jinja2.
    from l4lite.cli import analyze, evaluate, history, parse, report, simulate, tail

    return [parse, analyze, report, simulate, evaluate, tail, history]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="l4lite",
        description="Find which node is bad, in which phase a training job broke, what kind of fault it is, "
        "and which log lines prove it.",
    )
    parser.add_argument("--version", action="version", version=f"l4lite {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in _command_modules():
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.run(args))
    except L4Error as exc:
        print(f"l4lite: error: {printable(str(exc))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("l4lite: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
