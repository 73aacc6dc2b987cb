"""YAML text as settings: the bounded loader with CPU masks and lcore lists kept as the text they were written as,
and `--set KEY=VALUE`. core.config reads a config file through it."""

from __future__ import annotations

from typing import Any

from .errors import ZeroLossError

# settings whose text looks like a number but is not one: CPU masks (0x6 is hex text for OVS) and lcore lists; the
# RunConfig fields whose names end in _mask, _lcores or _cpus (tests/test_config.py checks that they are these)
TEXT_KEYS = frozenset({"ovs_pmd_cpu_mask", "ovs_lcore_mask", "vnf_emulator_cpus", "gen_lcores", "dut_lcores", "label"})


def setting(text: str, where: str = "--set") -> tuple[str, Any]:
    """KEY=VALUE with a YAML value, as --set takes it (a CPU mask or lcore list stays the text given: 0x4 is
    '0x4'); one line naming `where`, the key and the fault otherwise."""
    key, sep, value = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ZeroLossError(f"{text!r} is not KEY=VALUE")
    return key, yaml_load(value, f"{where} {key if key.isprintable() else repr(key)}", key)


def yaml_load(text: bytes | str, where: str, key: str | None = None) -> Any:
    """YAML text as Python values through the bounded loader (yamlio: size, nesting, aliases), or one line naming
    `where` and the fault. The values of TEXT_KEYS (anywhere in the document, or the whole document when `key` is
    one) stay the text they were written as: an unquoted 0x6 is '0x6', not the number 6, and 10 is the mask '10' as
    OVS reads it."""
    from . import yamlio

    return yamlio.load(text, where, lambda node: _keep_text(node, key in TEXT_KEYS))


def _keep_text(node: Any, whole: bool) -> None:
    """Marks the number scalars under TEXT_KEYS (or all of them: whole) as text, before YAML converts them."""
    import yaml

    stack, seen = [(node, whole)], set()
    while stack:
        n, text = stack.pop()
        if (id(n), text) in seen:  # an alias: the node it names is walked once
            continue
        seen.add((id(n), text))
        if isinstance(n, yaml.ScalarNode):
            if text and n.tag in ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float"):
                n.tag = "tag:yaml.org,2002:str"
        elif isinstance(n, yaml.SequenceNode):
            stack += [(item, text) for item in n.value]
        elif isinstance(n, yaml.MappingNode):
            stack += [(v, text or isinstance(k, yaml.ScalarNode) and k.value in TEXT_KEYS) for k, v in n.value]

