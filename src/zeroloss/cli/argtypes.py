"""argparse value types shared by the command lines: a bad value is one line naming it."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from zeroloss.core import frames
from zeroloss.core.errors import ZeroLossError
from zeroloss.core.frames import Frame
from zeroloss.core.model import MAX_FRAME, MIN_FRAME


def whole_number(lowest: int | None = None, highest: int | None = None) -> Callable[[str], int]:
    """A type for whole numbers (of at least `lowest` and at most `highest` when given)."""

    def parse(text: str) -> int:
        try:
            v = int(text) if len(text) <= 40 else int("x")
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{text[:40]}' is not a whole number") from None
        if lowest is not None and v < lowest:
            raise argparse.ArgumentTypeError(f"{v} must be at least {lowest}")
        if highest is not None and v > highest:
            raise argparse.ArgumentTypeError(f"{v} must be at most {highest:,}")
        return v

    return parse


def number(text: str) -> float:
    """A type for numbers (a range is the caller's to check)."""
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number") from None


def rate(text: str) -> float:
    """A rate in frames/s; accepts k/M/G suffixes (e.g. 1.5M); the range is the caller's to check."""
    mult = {"k": 1e3, "K": 1e3, "m": 1e6, "M": 1e6, "g": 1e9, "G": 1e9}.get(text[-1:], 1.0)
    try:
        return float(text[:-1] if mult != 1.0 else text) * mult
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a rate (frames/s, e.g. 500000 or 1.5M)") from None


def frame_sizes(text: str) -> list[Frame]:
    """The one parser of a frame-size list, '64,1518,9000' (bytes including FCS), with IMIXes: 'imix' (the simple
    IMIX 64:7,570:4,1518:1) or 'imix:64:7,570:4,1518:1' (a mix takes the SIZE:WEIGHT items after imix:), as
    frames.parse reads it; the range is checked where the sizes are used (check_frame, or the run settings')."""
    try:
        return frames.parse(text)
    except ZeroLossError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def frame_key(text: str) -> Frame:
    """One frame size in bytes, or an IMIX's label ('imix', 'imix:64:7,570:4,1518:1'), as a result file keys it."""
    if text.strip().isdigit():
        return whole_number(1)(text)
    try:
        return frames.key(text)
    except ZeroLossError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def check_frame(size: int) -> int:
    """A frame size within MIN_FRAME..MAX_FRAME bytes, or one line naming it."""
    if not MIN_FRAME <= size <= MAX_FRAME:
        raise ZeroLossError(f"frame size {size} B is outside {MIN_FRAME}..{MAX_FRAME} B (FCS included)")
    return size
