"""argparse value types shared by the command lines: a bad value is one line naming it."""

from __future__ import annotations

import argparse
from collections.abc import Callable


def whole_number(lowest: int) -> Callable[[str], int]:
    """A type for whole numbers of at least `lowest`."""

    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{text}' is not a whole number") from None
        if v < lowest:
            raise argparse.ArgumentTypeError(f"{v} must be at least {lowest}")
        return v

    return parse
