"""zlgen's latency buckets (gen/src/hist.h) and the text a result file keeps them in (core/latency.py reads and merges
the histograms). Pure: no I/O."""

from __future__ import annotations

import base64
import zlib
from collections.abc import Iterable

SUB_BITS = 7
SUB = 1 << SUB_BITS  # 128
MAX_EXP = 40
BUCKETS = SUB * (MAX_EXP - SUB_BITS + 2)

# bins text longer than this is stored deflated (bins_stored); the most a deflated one may inflate to: every bucket
# holding a 20-digit count and a gap
ZIP_OVER = 1024
ZIP_PREFIX = "z:"
ZIP_MAX = BUCKETS * 24


def bucket_index(v: int) -> int:
    """The bucket of a value in ns (zl_hist_index)."""
    if v < SUB:
        return max(0, int(v))
    e = int(v).bit_length() - 1
    if e > MAX_EXP:
        return BUCKETS - 1
    return SUB * (e - SUB_BITS + 1) + (int(v) >> (e - SUB_BITS)) - SUB


def bucket_low(i: int) -> int:
    """The smallest value of bucket i, ns (zl_hist_bucket_low)."""
    if i < SUB:
        return i
    return (SUB + i % SUB) << (i // SUB - 1)


def bucket_width(i: int) -> int:
    """The width of bucket i, ns (zl_hist_bucket_width)."""
    return 1 if i < SUB else 1 << (i // SUB - 1)


def bins_text(buckets: Iterable[tuple[int, int]]) -> str:
    """Sparse buckets (low ns, count), sorted, as the compact text a result file keeps: comma-separated counts of
    consecutive buckets from bucket index 0, a count after k empty buckets written `k:count`. Buckets 300, 301, 305
    holding 5, 2, 1: "300:5,2,3:1". A 1,700-bucket histogram takes ~6 KB instead of ~20 KB of [low, count] pairs
    (~70 KB indented), and a reader checks one string instead of walking thousands of lists."""
    out, at = [], 0
    for low, n in buckets:
        i = bucket_index(low)
        out.append(f"{i - at}:{n}" if i > at else str(n))
        at = i + 1
    return ",".join(out)


def bins_stored(buckets: Iterable[tuple[int, int]]) -> str:
    """The `bins` a result file keeps: the bins_text, or, when that passes ZIP_OVER characters, "z:" and the text
    deflated and in base64. A trial's two 1,800-bucket histograms took 18 of its 25 KB as text, 11 KB so (issue 37:
    20 KB a trial); lossless, so a stored histogram still gives zlgen's own percentiles."""
    text = bins_text(buckets)
    if len(text) <= ZIP_OVER:
        return text
    return ZIP_PREFIX + base64.b64encode(zlib.compress(text.encode("ascii"), 9)).decode("ascii")


def _unzipped(text: str) -> str:
    """The bins_text inside a "z:" bins; ValueError when it is not base64 of deflated ASCII or inflates past what
    zlgen's buckets can make (a crafted file cannot make the reader inflate gigabytes)."""
    try:
        z = zlib.decompressobj()
        out = z.decompress(base64.b64decode(text[len(ZIP_PREFIX):], validate=True), ZIP_MAX)
    except (ValueError, zlib.error) as e:
        raise ValueError(f"latency bins: deflated bins do not read: {e}") from None
    if z.unconsumed_tail or not z.eof:
        raise ValueError("latency bins: deflated bins are truncated or inflate past any zlgen histogram")
    try:
        return out.decode("ascii")
    except UnicodeDecodeError:
        raise ValueError("latency bins: deflated bins are not text") from None


def bins_of(text: str) -> list[tuple[int, int]]:
    """The sparse buckets (low ns, count) of a `bins_text` or `bins_stored`; ValueError naming the fault when it is
    not one."""
    if not isinstance(text, str):
        raise ValueError(f"latency bins are {type(text).__name__}, not text")
    if text.startswith(ZIP_PREFIX):
        text = _unzipped(text)
    out, at = [], 0
    for item in text.split(",") if text else ():
        skip, _, n = item.rpartition(":")
        if not n.isdigit() or not (skip == "" or skip.isdigit()):
            raise ValueError(f"latency bins: {item[:20]!r} is not COUNT or GAP:COUNT")
        at += int(skip or 0)
        if at >= BUCKETS:
            raise ValueError(f"latency bins: bucket {at} beyond zlgen's {BUCKETS}")
        out.append((bucket_low(at), int(n)))
        at += 1
    return out
