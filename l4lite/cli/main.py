"""Command line: a thin layer that parses flags and calls the pipeline. Nothing below it prints or exits.

Exit codes: 0 healthy (or command succeeded), 1 incident found, 2 usage or input error.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from types import ModuleType

from l4lite.cli.commands import COMMANDS
from l4lite.cli.terminal import printable
from l4lite.errors import L4Error
from l4lite.version import __version__


def chosen_command(argv: Sequence[str]) -> str | None:
    """The command named on the command line, if any: the first word that is not an option (the top level has
    no positional argument but the command)."""
    for word in argv:
        if not word.startswith("-"):
            return word
    return None


def command_module(name: str) -> ModuleType:
    """The module that implements command ``name``, imported on this call (each by a fixed name: no module is
    imported by a computed one)."""
    if name == "parse":
        from l4lite.cli import parse

        return parse
    if name == "analyze":
        from l4lite.cli import analyze

        return analyze
    if name == "report":
        from l4lite.cli import report

        return report
    if name == "simulate":
        from l4lite.cli import simulate

        return simulate
    if name == "eval":
        from l4lite.cli import evaluate

        return evaluate
    if name == "tail":
        from l4lite.cli import tail

        return tail
    if name == "history":
        from l4lite.cli import history

        return history
    raise KeyError(name)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The full parser; with ``command``, only that command's module is imported to describe its arguments and
    the others are listed by name and summary (process start-up is a large share of a small job's run)."""
    parser = argparse.ArgumentParser(
        prog="l4lite",
        description="Find which node is bad, in which phase a training job broke, what kind of fault it is, "
        "and which log lines prove it.",
    )
    parser.add_argument("--version", action="version", version=f"l4lite {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for entry in COMMANDS:
        if command is None or entry.name == command:
            command_module(entry.name).register(sub)
        else:
            sub.add_parser(entry.name, help=entry.summary)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(chosen_command(words) or "")
    args = parser.parse_args(words)
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
