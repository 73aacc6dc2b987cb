"""Plain text helpers every layer may use: engineering notation and the text table (no zeroloss imports)."""

from __future__ import annotations


def si(value: float, unit: str = "") -> str:
    """1234567 -> '1.235 M' (engineering notation with three decimals)."""
    for factor, prefix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{value / factor:.3f} {prefix}{unit}"
    return f"{value:.0f} {unit}".rstrip()


def table(headers: list[str], rows: list[list[str]], left: tuple[int, ...] = (0,)) -> str:
    """A plain text table with right-aligned columns, but the `left` ones (the first by default)."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]

    def line(cells: list[str]) -> str:
        pairs = enumerate(zip(cells, widths, strict=True))
        return "  ".join(c.ljust(w) if i in left else c.rjust(w) for i, (c, w) in pairs).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths]), *(line(r) for r in rows)])


def choose(text: str, known: tuple[str, ...], what: str) -> list[str]:
    """'b,a' -> the known names given, in known's order, each once; ValueError names an unknown one or none given."""
    given = [x.strip() for x in text.split(",") if x.strip()]
    unknown = [x for x in given if x not in known]
    if unknown or not given:
        raise ValueError(f"unknown {what} {unknown[0]!r}" if unknown else f"no {what} given")
    return [k for k in known if k in given]
