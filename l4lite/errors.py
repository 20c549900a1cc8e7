"""Errors that the CLI turns into one clear line (never a traceback) and exit code 2."""


class L4Error(Exception):
    """A usage or input error: the message names the file (and line) at fault."""


class InputError(L4Error):
    """The job's input cannot be read at all (missing path, nothing readable)."""
