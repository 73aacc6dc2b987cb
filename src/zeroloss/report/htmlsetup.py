"""The report's setup block of a run (host, settings, placement or lab node, generator ceiling, core probe) and
the tuning story of a tune file (report/html.py draws the page)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import fields
from html import escape
from typing import Any

from zeroloss.core import frames
from zeroloss.core.config import RunConfig
from zeroloss.report import plots
from zeroloss.report.docparts import LabHostPlace, LabPlace, PlaceFlows, StepChange, StepDecision, given, meta
from zeroloss.report.htmlbase import _fmt, _kv, _table
from zeroloss.results.campaigns import TuneRecord
from zeroloss.results.records import RunRecord
from zeroloss.results.summary import Run

HOST_KEYS = [("hostname", "host"), ("cpu_model", "CPU"), ("cpus", "CPUs"), ("numa_nodes", "NUMA nodes"),
             ("memory_mib", "memory, MiB"), ("hugepages", "hugepages (size: count)"), ("isolated_cpus", "isolcpus"),
             ("kernel", "kernel"), ("os", "OS"), ("dpdk_package", "DPDK package"), ("cmdline", "kernel cmdline"),
             ("python", "Python")]


def _lab_block(where: str, place: Mapping[str, Any]) -> str:
    """A lab node: where it is, the paths OVS traced, changes made; or its audit, finding by finding."""
    if where == "lab_host":
        return _lab_host(LabHostPlace.from_json(place))
    lab = LabPlace.from_json(place)
    items = [(k, _fmt(v), False, "") for k, v in (("dut", lab.dut), ("lab_file", lab.lab_file),
                                                  ("ovs_version", lab.ovs_version), ("ovs_rundir", lab.ovs_rundir),
                                                  ("dut_readings", lab.dut_readings)) if given(lab, k)]
    for c in lab.chains or ():
        hops = list(c.ovs_ports)
        path = " → ".join(hops[:1] + [f"{a} | {v} | {b}" for a, b, v in zip(hops[1::2], hops[2::2], c.vnfs,
                                                                                 strict=False)] + hops[-1:])
        items.append((f"path {c.tx}→{c.rx}", path, False, "traced by ofproto/trace"))
    for ch in lab.dut_changes or ():
        items.append(("changed (restored)", f"{ch.setting}: {ch.from_} → {ch.to}", True, "--dut-set"))
    items += [(f"port {p.name}", f"{p.device} → {p.dut_port}, {p.speed_gbps:g} Gb/s ({p.speed_from})",
               False, "") for p in lab.ports or ()]
    return _kv("Lab node", items)


def _lab_host(place: LabHostPlace) -> str:
    """The lab node's host and its audit, finding by finding (or why they were not read)."""
    if given(place, "error"):
        return _kv("Lab node's host", [("not read", _fmt(place.error), False, "")])
    findings = (place.audit.findings if place.audit is not None else None) or ()
    items = [("host", _fmt(place.host), False, "ssh destination"),
             ("hostname", _fmt(place.hostname), False, "")]
    items += [(f.severity, f"{f.rule}: {f.message}", False, f.remedy) for f in findings]
    if not findings:
        items.append(("audit", "no finding", False, "zeroloss host audit --host"))
    return _kv("Lab node's host and audit", items)


def _tune_section(runs: list[Run], tick: Callable[[], None]) -> Iterator[str]:
    """The tuning story of a tune file: NDR per step, the steps with their change and decision, how it ended."""
    tunes: list[TuneRecord] = []
    for r in runs:
        if r.tune is not None and all(r.tune is not t for t in tunes):
            tunes.append(r.tune)
    for t in tunes:
        from zeroloss.runs.tune.render import render as render_settings
        from zeroloss.runs.tune.render import target_text, tuned_keys

        fig = plots.svg_inline(plots.tune_figure(t), "tune")
        tick()
        rows = []
        for s in t.steps:
            d = StepDecision.from_json(s.decision or {})
            c = None if s.change is None else StepChange.from_json(s.change)
            rows.append([s.name, f"{c.key}: {c.old} → {c.new}" if c else "as given",
                         c.finding if c else "", d.effect,
                         "kept" if s.kept else ("reverted" if s.decision else ""), d.why])
        keys = tuned_keys(t)
        kept = (f"<pre>{escape(render_settings(keys, 'ovs-vsctl'))}</pre>" if keys
                else "<p>No setting was kept: the start settings stay.</p>")
        advice = "".join(f"<li>{escape(a)}</li>" for a in t.advice)
        yield (f'<section id="tune"><h2>Tuning story: target {escape(target_text((t.target[0], t.target[1])))}'
               f'</h2><div class="fig">{fig}</div>'
               + _table(["step", "change", "finding", "effect", "", "why"], rows)
               + f"<p>Ended: {escape(t.stop or 'not yet (resume with zeroloss tune --resume)')}</p>"
               + "<h3>Settings kept</h3>" + kept + (f"<h3>Advice (not tried on the bench)</h3><ul>{advice}</ul>"
                                                    if advice else "") + "</section>")


def _setup(run: RunRecord) -> str:
    """The run's setup: host, settings (those changed first), placement or lab node, generator ceiling, core probe."""
    host = run.host
    host_items = [(name, _fmt(host.get(key)), False, key) for key, name in HOST_KEYS if key in host]
    defaults = RunConfig()
    cfg = run.config
    cfg_items: list[tuple[str, str, bool, str]] = []
    for f in fields(RunConfig):
        if f.name in cfg:
            unit = meta(f).unit or ""
            value = _fmt(cfg[f.name]) + ("" if unit in ("", "%") else " ") + unit
            cfg_items.append((f.name, value, cfg[f.name] != getattr(defaults, f.name), meta(f).help))
    cfg_items += [(k, _fmt(v), True, "not a setting of this zeroloss") for k, v in cfg.items()
                  if k not in {f.name for f in fields(RunConfig)}]
    changed = [item for item in cfg_items if item[2]]
    blocks = [_kv("Host", host_items),
              "<div>" + _kv("Settings changed from the default", changed)
              + f"<details><summary>all {len(cfg_items)} settings (bold: changed)</summary>"
              + _kv("Settings", cfg_items) + "</details></div>"]
    for where, place in run.place().items():
        if where in ("lab", "lab_host"):
            blocks.append(_lab_block(where, place))
            continue
        items = [(k, _fmt(v), False, "") for k, v in place.items() if k != "flows"]
        items += [(f"flows {br}", "; ".join(rules), False, "OpenFlow rules zeroloss installed")
                  for br, rules in (PlaceFlows.from_json(place).flows or {}).items()]
        blocks.append(_kv(f"Core placement and DUT: {where}", items))
    return '<div class="grid">' + "".join(blocks) + _ceilings(run) + _core_probes(run) + "</div>"


def _ceilings(run: RunRecord) -> str:
    """The generator's ceiling per frame size, when it was measured."""
    if not run.ceilings:
        return ""
    rows = [[frames.text(frames.key(f)), f"{c.pps:,.0f}", c.link or "", c.how or ""]
            for f, c in sorted(run.ceilings.items(), key=lambda kv: frames.order(frames.key(kv[0])))]
    return ("<div><h4>Generator ceiling (highest rate tried)</h4>"
            + _table(["frame", "pps", "wire", "measured"], rows) + "</div>")


def _core_probes(run: RunRecord) -> str:
    """The core probe's readings before each bench, when it ran."""
    if not run.core_probes:
        return ""
    rows = [[", ".join(map(frames.text, p.frames)), ",".join(map(str, p.cores)),
             " / ".join(f"{x:.2f}" for x in p.ratio), "shared" if p.shared else "independent"]
            for p in run.core_probes]
    return ("<div><h4>Core probe (each core's speed with all busy / alone, before the bench)</h4>"
            + _table(["frames", "cores", "together / alone", "verdict"], rows) + "</div>")
