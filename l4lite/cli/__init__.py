"""Command line: flags to library calls, results to the terminal. Nothing below this package prints or exits."""
