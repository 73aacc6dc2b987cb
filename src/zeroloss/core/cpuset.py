"""CPU lists and masks as the kernel and OVS write them: '0-3,8' lists and '0x3000000003' masks."""

from __future__ import annotations

from collections.abc import Iterable

MAX_CPUS = 8192  # the largest NR_CPUS Linux builds with (x86 MAXSMP): no CPU id reaches it


def shown(text: str, limit: int = 40) -> str:
    """Text quoted for a one-line message: newlines escaped, cut after limit characters."""
    text = text.strip()
    return repr(text) if len(text) <= limit else repr(text[:limit]) + "..."


def parse_list(text: str) -> tuple[int, ...]:
    """'0-2,8,10-11' -> (0, 1, 2, 8, 10, 11); empty or whitespace -> (). Raises ValueError naming the fault
    (one line): a non-number, a range that runs backwards, an empty item ('1,,2'), a CPU id >= MAX_CPUS."""
    if not text.strip():
        return ()
    cpus: set[int] = set()
    for item in text.strip().split(","):
        item = item.strip()
        if not item:
            raise ValueError(f"CPU list {shown(text)} has an empty item")
        lo, sep, hi = item.partition("-")
        try:
            first, last = int(lo), int(hi) if sep else int(lo)
        except ValueError:
            raise ValueError(f"{shown(item)} in CPU list {shown(text)} is not a number or range") from None
        if last < first:
            raise ValueError(f"range {shown(item)} in CPU list {shown(text)} runs backwards")
        if first < 0 or last >= MAX_CPUS:
            raise ValueError(f"{shown(item)} in CPU list {shown(text)} is not a CPU id 0..{MAX_CPUS - 1}")
        cpus.update(range(first, last + 1))
    return tuple(sorted(cpus))


def parse_kernel_list(text: str) -> tuple[int, ...]:
    """A CPU list as the kernel reads it on its command line (lib/bitmap-str.c bitmap_parselist; "CPU lists" in
    Documentation/admin-guide/kernel-parameters.rst): parse_list's items, and a range in groups, 'a-b:used/group':
    from a, the first `used` CPUs of every `group` up to b ('2-35:2/4' -> 2,3,6,7,...,34,35). ValueError as
    parse_list, or for a group of 0 or fewer CPUs than used (the kernel's -EINVAL)."""
    plain: list[str] = []
    cpus: set[int] = set()
    for item in text.strip().split(","):
        span, sep, groups = item.strip().partition(":")
        if not sep:
            plain.append(item)
            continue
        used, slash, size = groups.partition("/")
        try:
            first, last = parse_list(span)[0], parse_list(span)[-1]
            used_n, size_n = int(used), int(size)
        except (ValueError, IndexError):
            raise ValueError(f"{shown(item)} in CPU list {shown(text)} is not FIRST-LAST:USED/GROUP") from None
        if not slash or "-" not in span or size_n <= 0 or not 0 <= used_n <= size_n:
            raise ValueError(f"{shown(item)} in CPU list {shown(text)}: the group must hold 1 or more CPUs and at "
                             "least the used ones")
        cpus.update(c for start in range(first, last + 1, size_n) for c in range(start, min(start + used_n, last + 1)))
    if plain:
        cpus.update(parse_list(",".join(plain)))
    return tuple(sorted(cpus))


def format_list(cpus: Iterable[int]) -> str:
    """(0, 1, 2, 8, 10, 11) -> '0-2,8,10-11' (sorted, duplicates dropped, ranges of 2 or more joined)."""
    ordered = sorted(set(cpus))
    parts: list[str] = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        parts.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(parts)


def to_mask(cpus: Iterable[int]) -> str:
    """CPUs -> OVS hex mask: (0, 1, 36, 37) -> '0x3000000003'."""
    value = 0
    for c in cpus:
        value |= 1 << c
    return hex(value)


def parse_mask(text: str) -> tuple[int, ...]:
    """OVS hex mask (with or without 0x, ',' separated 32-bit words as in /proc) -> sorted CPUs."""
    digits = text.strip().strip('"').replace(",", "")
    try:
        value = int(digits, 16) if digits else 0
    except ValueError:
        raise ValueError(f"'{text.strip()}' is not a hexadecimal CPU mask") from None
    return tuple(i for i in range(value.bit_length()) if value >> i & 1)
