"""The command line: `zeroloss` and its subcommands (the only layer that prints)."""

from zeroloss.cli.main import main

__all__ = ["main"]
