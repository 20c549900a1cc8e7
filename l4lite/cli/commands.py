"""The table of commands: name, implementing module and one-line summary.

Kept apart from the command modules so that ``l4lite --help`` can list every command, and ``l4lite parse`` can
build its parser, without importing the modules (and the numpy, pyarrow or simulator code they pull in) of the
commands that are not being run.
"""

from __future__ import annotations

from typing import NamedTuple


class Command(NamedTuple):
    """One subcommand: its name on the command line, the module whose ``register`` adds it (imported by
    ``cli.main.command_module``), its summary."""

    name: str
    module: str
    summary: str


COMMANDS: tuple[Command, ...] = (
    Command("parse", "l4lite.cli.parse",
            "turn a job's logs into records with stable template ids (Parquet, CSV or JSON lines)"),
    Command("analyze", "l4lite.cli.analyze", "diagnose a failed or hung job: bad node, phase, category, evidence"),
    Command("report", "l4lite.cli.report", "write the self-contained HTML report of a saved incident"),
    Command("simulate", "l4lite.cli.simulate",
            "generate a realistic multi-node training job with an injected fault and its ground truth"),
    Command("eval", "l4lite.cli.evaluate",
            "score the analyser and the Error_time / Error_count baselines on simulated jobs"),
    Command("tail", "l4lite.cli.tail",
            "follow a running job's logs and raise alerts (JSON lines, webhook) as failures appear"),
    Command("history", "l4lite.cli.history",
            "cross-job baselines, the fault library and the fleet view (history store)"),
)


def summary(name: str) -> str:
    """The one-line help of command ``name``, as ``l4lite --help`` lists it."""
    for command in COMMANDS:
        if command.name == name:
            return command.summary
    raise KeyError(name)
