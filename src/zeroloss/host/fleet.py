"""`zeroloss host fleet`: the inventory, audit and plan of every host of an Ansible inventory, and how each node
deviates from the plan.

Ansible runs ansible/collect.yml, which ships collect.py to each host (script module, python3 there) and returns its
JSON document; here each document is materialised as a tree (remote.materialise), read by the usual inventory, audited,
planned for the operator's intent, and compared setting by setting with the plan (deviations()).

ansible-runner rather than a bare `ansible-playbook`: it hands back each host's outcome as structured events (ok with
the task's stdout, unreachable, failed with Ansible's message), so no human-readable output is parsed and no callback
plugin has to be installed; it also keeps the run's artifacts in one directory and applies a timeout.

Host keys are checked as OpenSSH checks them: ansible-runner turns Ansible's checking off unless told otherwise
(ANSIBLE_HOST_KEY_CHECKING=False), so zeroloss turns it on and puts StrictHostKeyChecking=yes (accept-new with
--accept-new-host-keys) first among ssh's options, where no inventory or ssh config setting can override it: a changed
key is refused, an unknown one too unless the user opts in.
"""

from __future__ import annotations

import dataclasses
import json
import re
import tempfile
from collections.abc import Callable
from pathlib import Path

from zeroloss.core.cpuset import format_list, parse_list, to_mask
from zeroloss.core.errors import ZeroLossError
from zeroloss.core.fileio import write_text_atomic
from zeroloss.core.text import table

from . import remote
from .audit import SEVERITIES, Context, Finding, run
from .fleetrun import Collected, run_playbook, ssh_config_path
from .inventory import Inventory
from .plan import Intent, Plan, make_plan
from .planmem import HUGEPAGE_1G_KB
from .ssh import unreachable_hint

FLEET_FORMAT = 1  # 1: fleet.json {format, inventory, limit, ssh_config, intent, hosts, exit_code}; HOST.json below


def ovs_unread(note: str) -> Finding:
    """The finding for a host whose OVS could not be read (OVS down, or not where --ovs-rundir says): without it the
    OVS rules would be skipped and the host would pass with "0 errors"."""
    why = note.removesuffix(": OVS rules skipped") or "no OVS state"
    return Finding("ovs-unreadable", "error", f"OVS could not be read, so none of its settings were audited: {why}",
                   note, "zeroloss: the OVS rules need ovs-vsctl/ovs-appctl answers from the running OVS",
                   "start OVS (ovs-vswitchd and ovsdb-server), or give --ovs-rundir DIR (the folder holding db.sock "
                   "there); --ovs-state none audits the host without OVS")


# -- the plan against the node ----------------------------------------------------------------------------------

def _row(setting: str, planned, actual, same: bool | None) -> dict:
    status = "unknown" if same is None else "same" if same else "differs"
    return {"setting": setting, "planned": str(planned), "actual": str(actual), "status": status}


def _cpus_text(cpus) -> str:
    return format_list(cpus) or "none"


def _norm(key: str, value: str) -> str:
    """A kernel argument's value as the kernel reads it: page sizes '1G' and '1GB' are the same (memparse)."""
    if key in ("default_hugepagesz", "hugepagesz"):
        m = re.fullmatch(r"([0-9]+)([KMG])B?", value, re.IGNORECASE)
        return f"{m.group(1)}{m.group(2).upper()}" if m else value
    return value


def _kernel_rows(plan: Plan, inv: Inventory) -> list[dict]:
    rows = []
    args = inv.cmdline_args()
    for arg in plan.kernel_args:
        key, _, value = arg.partition("=")
        if key == "hugepages":
            continue  # compared as the pages each node has (below): the same count can be asked in several ways
        if key in ("isolcpus", "nohz_full", "rcu_nocbs"):
            want = parse_list(value)
            have = inv.cmdline_cpus(key)
            rows.append(_row(f"kernel {key}", _cpus_text(want), _cpus_text(have), set(want) == set(have)))
            continue
        have_values = args.get(key)
        actual = "absent" if have_values is None else " ".join(f"{key}={v}" if v else key for v in have_values)
        same = have_values is not None and _norm(key, value) in {_norm(key, v) for v in have_values}
        rows.append(_row(f"kernel {key}", arg, actual, same))
    for node in inv.nodes:
        want = plan.hugepages_1g.get(node.id, 0)
        have = node.pool(HUGEPAGE_1G_KB).nr
        rows.append(_row(f"1 GB hugepages node {node.id}", want, have, want == have))
    return rows


def _mask_text(cpus) -> str:
    return f"{to_mask(cpus)} (CPUs {_cpus_text(cpus)})" if cpus else "unset"


def _ovs_rows(plan: Plan, inv: Inventory) -> list[dict]:
    ovs = inv.ovs
    oc = {k: v.strip('"') for k, v in ovs.other_config.items()}
    rows = [_row("OVS dpdk-init", "true", oc.get("dpdk-init", "unset"), oc.get("dpdk-init") in ("true", "try")),
            _row("OVS pmd-cpu-mask", _mask_text(plan.pmd_cpus), _mask_text(ovs.pmd_cpus()),
                 set(plan.pmd_cpus) == set(ovs.pmd_cpus())),
            _row("OVS dpdk-lcore-mask", _mask_text(plan.housekeeping), _mask_text(ovs.lcore_cpus()),
                 set(plan.housekeeping) == set(ovs.lcore_cpus()))]
    have_mem = ovs.socket_mem()
    want_mem = [plan.socket_mem[n] for n in plan.nodes]
    rows.append(_row("OVS dpdk-socket-mem", plan.socket_mem_list(), oc.get("dpdk-socket-mem", "unset"),
                     have_mem is not None and have_mem + [0] * (len(want_mem) - len(have_mem)) == want_mem))
    m = re.search(r"(?:^|\s)-n\s*([0-9]{1,3})\b", oc.get("dpdk-extra", ""))
    rows.append(_row("OVS dpdk-extra -n (memory channels)", plan.memory_channels, m.group(1) if m else "unset",
                     bool(m) and int(m.group(1)) == plan.memory_channels))
    if plan.intent.per_port_memory:
        rows.append(_row("OVS per-port-memory", "true", oc.get("per-port-memory", "unset"),
                         oc.get("per-port-memory") == "true"))
    for key, value in plan.pmd_auto_lb.items():
        rows.append(_row(f"OVS {key}", value, oc.get(key, "unset"), oc.get(key) == value))
    for p in plan.ports:
        iface = next((i for i in ovs.interfaces if i.is_dpdk and i.devargs and
                      (i.devargs == p.pci or (inv.nic(i.devargs) and inv.nic(i.devargs).pci == p.pci))), None)
        label = f"port {p.pci}{f' ({p.netdev})' if p.netdev else ''}"
        if iface is None:
            rows.append(_row(f"{label} in OVS", "a type=dpdk interface", "none", False))
            continue
        rows.append(_row(f"{label} mtu_request", p.mtu, iface.mtu_request or "unset", iface.mtu_request == p.mtu))
        for key, want, default in (("n_rxq", p.n_rxq, 1), ("n_rxq_desc", p.rxq_desc, 2048),
                                   ("n_txq_desc", p.txq_desc, 2048)):
            have = iface.options.get(key)
            value = default if have is None else int(have) if have.isdigit() else None
            rows.append(_row(f"{label} {key}", want, have if have is not None else f"unset ({default})", value == want))
    return rows


def deviations(plan: Plan, inv: Inventory, ovs_note: str = "") -> list[dict]:
    """Every setting the plan makes, against the node: {setting, planned, actual, status: same|differs|unknown}.
    The kernel arguments (isolcpus, nohz_full, rcu_nocbs as CPU sets), 1 GB pages per node, the DPDK ports'
    driver, and with the OVS state its other_config and each planned port's MTU, queues and descriptors."""
    rows = _kernel_rows(plan, inv)
    for p in plan.ports:
        rows.append(_row(f"port {p.pci} driver", "vfio-pci", p.driver or "none", p.driver == "vfio-pci"))
    if inv.ovs is None:
        why = ovs_note.removesuffix(": OVS rules skipped") or "no OVS state"
        rows.append(_row("OVS other_config and ports", "dpdk-init, masks, socket memory, ports", why, None))
    else:
        rows += _ovs_rows(plan, inv)
    return rows


# -- one host, the fleet ----------------------------------------------------------------------------------------

def safe_name(host: str) -> str:
    """A host's inventory name as a file name."""
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", host)
    return "_" + name if name in ("", ".", "..", "fleet") else name  # 'fleet' would be fleet.json


def host_result(c: Collected, intent: Intent, tree: Path) -> dict:
    """HOST.json: {format, host, status, message, hostname, inventory, audit, plan, plan_error, deviations,
    collector_errors, counts}; status ok | unreachable | failed | error (the document could not be read)."""
    from .report import inventory_dict

    out = {"format": FLEET_FORMAT, "host": c.host, "status": c.status, "message": c.message}
    if c.status != "ok":
        return out
    try:
        doc = remote.parse(c.stdout, c.host)
        root, ovs, note = remote.load(doc, tree, c.host)
        inv = remote.inventory(root, ovs, f"ansible:{c.host}")
    except ZeroLossError as e:
        return {**out, "status": "error", "message": str(e)}
    report = run(Context(inv, inv.ovs))
    report.notes.append(note)
    if inv.ovs is None:
        report.findings.insert(0, ovs_unread(note))
    out.update(hostname=doc.get("hostname"), tree=str(tree), collector_errors=doc["errors"],
               inventory=json.loads(json.dumps(inventory_dict(inv), default=str)),
               audit=remote.audit_dict(inv, report),
               counts={s: sum(1 for f in report.findings if f.severity == s) for s in SEVERITIES})
    try:
        plan = make_plan(inv, intent)
    except ZeroLossError as e:
        out.update(plan=None, plan_error=str(e), deviations=[])
        return out
    doc_plan = dataclasses.asdict(plan)
    doc_plan["pmd_cpus"] = list(plan.pmd_cpus)
    out.update(plan=json.loads(json.dumps(doc_plan, default=str)), plan_error=None,
               deviations=deviations(plan, inv, note))
    return out


def exit_code(hosts: list[dict]) -> int:
    """1: a host unreachable, failed, unreadable or not plannable; 2: error-level findings; 0: neither. A host
    without OVS has nothing to plan: not a failure (its ovs-unreadable finding says what was not read)."""
    if any(h["status"] != "ok" or (h.get("plan_error") and not _ovs_unread(h)) for h in hosts):
        return 1
    return 2 if any(h.get("counts", {}).get("error") for h in hosts) else 0


def fleet(inventory: str, intent: Intent, output: Path | None = None, limit: str | None = None,
          ssh_config: str | None = None, ovs_rundir: str | None = None,
          progress: Callable[[str], None] | None = None, accept_new_host_keys: bool = False) -> dict:
    """fleet.json's document with every host's result in 'hosts'; with output, writes OUTPUT/HOST.json, the host's
    tree OUTPUT/HOST/ (readable later with --root) and OUTPUT/fleet.json, each as soon as it is known."""
    ssh_config = ssh_config_path(ssh_config) if ssh_config else None
    if output is not None:
        output.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="zeroloss-fleet-") as tmp:
        collected = run_playbook(inventory, Path(tmp) / "ansible", limit, ssh_config, ovs_rundir, progress,
                                 accept_new_host_keys)
        base = output if output is not None else Path(tmp) / "trees"
        hosts = []
        for c in collected:
            result = host_result(c, intent, base / safe_name(c.host))
            if output is None:
                result.pop("tree", None)
            else:
                write_text_atomic(output / f"{safe_name(c.host)}.json", json.dumps(result, indent=1) + "\n")
            hosts.append(result)
    doc = {"format": FLEET_FORMAT, "inventory": inventory, "limit": limit, "ssh_config": ssh_config,
           "intent": dataclasses.asdict(intent),
           "hosts": [_summary(h) for h in hosts], "exit_code": exit_code(hosts)}
    if output is not None:
        write_text_atomic(output / "fleet.json", json.dumps(doc, indent=1) + "\n")
    doc["results"] = hosts
    return doc


def _summary(h: dict) -> dict:
    devs = h.get("deviations") or []
    return {"host": h["host"], "status": h["status"], "message": h.get("message", ""),
            "hostname": h.get("hostname"), "counts": h.get("counts"), "plan_error": h.get("plan_error"),
            "deviations": sum(1 for d in devs if d["status"] == "differs"),
            "compared": sum(1 for d in devs if d["status"] != "unknown"),
            "file": f"{safe_name(h['host'])}.json"}


def _ovs_unread(h: dict) -> bool:
    return any(f["rule"] == "ovs-unreadable" for f in (h.get("audit") or {}).get("findings", []))


def fleet_text(doc: dict) -> str:
    """The combined report: one row per host, then per host its findings and where it deviates from the plan."""
    hosts = doc["results"]
    states = {}
    for h in hosts:
        states[h["status"]] = states.get(h["status"], 0) + 1
    limit = f" (--limit {doc['limit']})" if doc["limit"] else ""
    out = [f"zeroloss host fleet: {doc['inventory']}{limit}: {len(hosts)} host(s), "
           + ", ".join(f"{n} {s}" for s, n in sorted(states.items()))]
    rows = []
    for h in hosts:
        counts = h.get("counts") or {}
        s = _summary(h)
        status = "no plan" if h.get("plan_error") and not _ovs_unread(h) else h["status"]
        if _ovs_unread(h):
            status += " (no OVS)"
        rows.append([h["host"], status,
                     *(str(counts[k]) if counts else "-" for k in SEVERITIES),
                     f"{s['deviations']} of {s['compared']}" if s["compared"] else "-"])
    out += ["", table(["host", "status", "errors", "warnings", "info", "plan deviations"], rows)]
    for h in hosts:
        out.append("")
        if h["status"] != "ok":
            out.append(f"== {h['host']}: {h['status'].upper()}: {h['message']}")
            if h["status"] == "unreachable":
                out.append(f"  {unreachable_hint(h['host'], doc.get('ssh_config'))}")
            continue
        counts = h["counts"]
        out.append(f"== {h['host']} (hostname {h.get('hostname') or '?'}): "
                   + ", ".join(f"{counts[s]} {s}{'s' if counts[s] != 1 and s != 'info' else ''}" for s in SEVERITIES))
        for f in h["audit"]["findings"]:
            out.append(f"  {f['severity'].upper():8} {f['rule']}: {f['message']}")
        if h.get("plan_error"):
            out.append(f"  plan: none: no OVS was read, nothing to tune ({h['plan_error']})" if _ovs_unread(h) else
                       f"  plan: not possible: {h['plan_error']}")
            continue
        s = _summary(h)
        devs = [d for d in h["deviations"] if d["status"] != "same"]
        out.append(f"  plan vs node: {s['deviations']} of {s['compared']} settings differ" + (":" if devs else ""))
        out += [f"    {d['setting']}: plan {d['planned']}, node {d['actual']}" if d["status"] == "differs" else
                f"    {d['setting']}: not compared ({d['actual']})" for d in devs]
        for e in h.get("collector_errors") or []:
            out.append(f"  collector: {e}")
    code = doc["exit_code"]
    out += ["", {0: "exit 0: every host collected, no error-level finding",
                 1: "exit 1: a host could not be collected or planned",
                 2: "exit 2: error-level findings"}[code]]
    return "\n".join(out)
