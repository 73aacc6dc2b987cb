"""A frame key: what one search of `zeroloss run` sends, a frame size or an IMIX, and how it is named and counted.

A key is an int (a frame size in bytes, FCS included) or the stable label of a mix (a str): `imix` is the simple
IMIX 64:7,570:4,1518:1 (FD.io CSIT's IMIX, 28x64B 16x570B 4x1518B, as zeroloss counts frames: with FCS);
`imix:64:7,570:4,1518:1` is a mix given size by size, weight by weight. The key is what the result file, the
config's frame_sizes and require_ndr store, JSON as it is (an int or a string), so every reader keys a mix like a
size. Only stream() turns it into what zlgen sends (stream.Imix).

A mix's line-rate arithmetic uses its mean frame (RFC 2544 §20 / the Intel OVS-DPDK whitepaper's IMIX rows
report frames/s and Gb/s): L2 Gb/s = pps x mean x 8, L1 Gb/s = pps x (mean + 20 B preamble, SFD and gap) x 8,
line rate = link b/s / ((mean + 20) x 8). What must fit through a port (MTU, the bench's wire, zlgen's mbufs) is
its largest frame.

The list grammar (`--frame-sizes`, and each item of frame_sizes in YAML): items are separated by commas; an item
is a size (64), `imix`, or `imix:SIZE:WEIGHT` starting a mix that takes the SIZE:WEIGHT items after it:
`64,imix:64:7,570:4,1518:1,9000` is 64 B, the mix, 9000 B. A size never holds a colon, so nothing is ambiguous.
"""

from __future__ import annotations

from collections.abc import Iterable

from .errors import ZeroLossError
from .model import L1_OVERHEAD, MAX_FRAME, MIN_FRAME
from .stream import Imix, Size

Frame = int | str
IMIX = "imix"
SIMPLE_IMIX = ((64, 7), (570, 4), (1518, 1))
EXAMPLE = "e.g. 64,1518,imix or 64,imix:64:7,570:4,1518:1"


def label(mix: tuple[tuple[int, int], ...]) -> str:
    """The stable label of a mix: `imix` for the simple IMIX, else imix:SIZE:WEIGHT,... in the order given."""
    return IMIX if mix == SIMPLE_IMIX else IMIX + ":" + ",".join(f"{s}:{w}" for s, w in mix)


def parse(text: str) -> list[Frame]:
    """A frame-size list as a flag gives it ('64,1518,imix', '64,imix:64:7,570:4,1518:1'), or one line naming
    the fault. A mix's sizes are checked here, single sizes where they are used (key, or the run settings)."""
    out: list[Frame] = []
    mix: list[tuple[int, int]] | None = None
    for item in (x.strip() for x in text.split(",")):
        if not item:
            continue
        low = item.lower()
        if low.startswith(IMIX + ":") or mix is not None and ":" in item and not low.startswith(IMIX):
            if low.startswith(IMIX + ":"):
                if mix is not None:
                    out.append(label(_mix(mix)))
                mix, item = [], item[len(IMIX) + 1:]
            assert mix is not None
            mix.append(_entry(item, text))
            continue
        if mix is not None:
            out.append(label(_mix(mix)))
            mix = None
        if ":" in item:
            raise ZeroLossError(f"frame sizes {text[:80]!r}: {item[:20]!r} is a SIZE:WEIGHT entry outside a mix",
                                f"start the mix with imix: ({EXAMPLE})")
        out.append(IMIX if low == IMIX else _int(item, text))
    if mix is not None:
        out.append(label(_mix(mix)))
    return out


def key(value: object) -> Frame:
    """One frame key as YAML or a result file holds it (a whole number, or a mix's label), checked; a label comes
    back in its stable form (IMIX, Imix:64:7 -> imix:64:7)."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ZeroLossError(f"frame size {value!r:.40} is neither a size in bytes nor an IMIX ({EXAMPLE})")
    if isinstance(value, int):
        if not MIN_FRAME <= value <= MAX_FRAME:
            raise ZeroLossError(f"frame size {value} B is outside {MIN_FRAME}..{MAX_FRAME} B (FCS included)")
        return value
    text = value.strip()
    if text.lower() == IMIX:
        return IMIX
    if not text.lower().startswith(IMIX + ":"):
        if text.isdigit():
            return key(int(text))
        raise ZeroLossError(f"frame size {value[:40]!r} is neither a size in bytes nor an IMIX ({EXAMPLE})")
    return label(_mix([_entry(e.strip(), value) for e in text[len(IMIX) + 1:].split(",") if e.strip()]))


def keys(values: Iterable[object]) -> list[Frame]:
    """A list of frame keys as YAML gives it (numbers, and labels each holding a whole mix), checked."""
    return [key(v) for v in values]


def imix(frame: Frame) -> Imix | None:
    """The mix a key names, or None for a single size."""
    if isinstance(frame, int):
        return None
    if frame == IMIX:
        return Imix(SIMPLE_IMIX)
    return Imix(tuple((int(s), int(w)) for s, w in (e.split(":") for e in frame[len(IMIX) + 1:].split(","))))


def stream_size(frame: Frame) -> Size:
    """What a Stream sends for the key: the size, or the mix (zlgen interleaves it by weight)."""
    return imix(frame) or int(frame)


def largest(frame: Frame) -> int:
    """The largest frame the key sends: what must pass every port's MTU and fit the wire and the mbufs."""
    m = imix(frame)
    return m.largest if m else int(frame)


def mean(frame: Frame) -> float:
    """The mean frame of the key in bytes (the size itself for a single size): what line-rate arithmetic uses."""
    m = imix(frame)
    return m.mean_bytes if m else float(frame)


def line_rate_pps(link_bps: float, frame: Frame) -> float:
    """Frames per second a link carries at the key: link b/s / ((mean frame + 20 B) x 8)."""
    return link_bps / ((mean(frame) + L1_OVERHEAD) * 8)


def text(frame: Frame) -> str:
    """The key as tables and messages show it: '64 B', 'imix', 'imix:64:7,570:4,1518:1'."""
    return f"{frame} B" if isinstance(frame, int) else frame


def legend(frames: Iterable[Frame]) -> list[str]:
    """One line per mix among the keys, for under a table: what it sends and the mean its Gb/s are counted with."""
    out = []
    for f in dict.fromkeys(frames):
        m = imix(f)
        if m is not None:
            mix = ",".join(f"{s}:{w}" for s, w in m.mix)
            out.append(f"  {f}: frames of {mix} B interleaved by weight (SIZE:WEIGHT), mean {m.mean_bytes:.1f} B: "
                       f"its Gb/s and line rate % are of the mean frame")
    return out


def order(frame: Frame) -> tuple[int, float, str]:
    """A sort key: sizes by size, then mixes by mean frame (ints and labels do not compare)."""
    return (0, float(frame), "") if isinstance(frame, int) else (1, mean(frame), frame)


def by_size(frames: Iterable[Frame]) -> list[Frame]:
    """Frame keys sorted: sizes ascending, then mixes."""
    return sorted(frames, key=order)


def _int(item: str, whole: str) -> int:
    try:
        return int(item) if len(item) <= 9 else int("x")
    except ValueError:
        raise ZeroLossError(f"{whole[:80]!r} is not a list of frame sizes (e.g. 64,1518,9000 or 64,imix)") from None


def _entry(item: str, whole: str) -> tuple[int, int]:
    size, sep, weight = item.partition(":")
    try:
        if not sep or ":" in weight:
            raise ValueError
        return int(size), int(weight)
    except ValueError:
        raise ZeroLossError(f"IMIX {whole[:80]!r}: {item[:20]!r} is not SIZE:WEIGHT", EXAMPLE) from None


def _mix(entries: list[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    try:
        return Imix(tuple(entries)).mix
    except ValueError as e:
        raise ZeroLossError(str(e)) from None
