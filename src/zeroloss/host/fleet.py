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

from zeroloss.core.codec import Json, JsonObject, Record
from zeroloss.core.cpuset import format_list, parse_list, to_mask
from zeroloss.core.errors import ZeroLossError
from zeroloss.core.fileio import write_text_atomic
from zeroloss.core.text import table

from . import remote
from .audit import SEVERITIES, Context, Finding, run
from .fleetrun import Collected, run_playbook, ssh_config_path
from .inventory import Inventory
from .ovsrecords import OtherConfig
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


# -- the records of HOST.json and fleet.json --------------------------------------------------------------------

@dataclasses.dataclass(frozen=True, kw_only=True)
class Deviation(Record):
    """One setting of the plan against the node; status same | differs | unknown."""
    setting: str
    planned: str
    actual: str
    status: str


@dataclasses.dataclass(frozen=True, kw_only=True)
class Counts(Record):
    """The findings of a host per severity (SEVERITIES' order)."""
    error: int = 0
    warning: int = 0
    info: int = 0

    def by_severity(self) -> tuple[tuple[str, int], ...]:
        return tuple(zip(SEVERITIES, (self.error, self.warning, self.info), strict=True))


@dataclasses.dataclass(frozen=True, kw_only=True)
class AuditFinding(Record):
    """A finding as `host audit --json` writes it (audit.Finding)."""
    rule: str = ""
    severity: str = ""
    message: str = ""
    evidence: str = ""
    source: str = ""
    remedy: str = ""


@dataclasses.dataclass(frozen=True, kw_only=True)
class AuditDoc(Record):
    """`host audit --json`'s document (remote.audit_dict)."""
    root: str | None = None
    findings: tuple[AuditFinding, ...] = ()
    passed: Json = None
    skipped: Json = None
    notes: Json = None
    exit_code: int = 0


@dataclasses.dataclass(frozen=True, kw_only=True)
class HostOutcome(Record):
    """HOST.json of a host that was not collected (unreachable, failed) or whose document could not be read."""
    format: int = FLEET_FORMAT
    host: str = ""
    status: str = ""
    message: str = ""


@dataclasses.dataclass(frozen=True, kw_only=True)
class HostResult(HostOutcome):
    """HOST.json of a collected host (hostname, plan and plan_error written as null when None)."""
    hostname: str | None = None
    tree: str | None = None
    collector_errors: Json = None
    inventory: JsonObject | None = None
    audit: AuditDoc | None = None
    counts: Counts | None = None
    plan: JsonObject | None = None
    plan_error: str | None = None
    deviations: tuple[Deviation, ...] | None = None

    NULLABLE = frozenset({"hostname", "plan", "plan_error"})

    @property
    def ovs_unread(self) -> bool:
        return any(f.rule == "ovs-unreadable" for f in (self.audit.findings if self.audit else ()))

    @property
    def differing(self) -> int:
        return sum(1 for d in self.deviations or () if d.status == "differs")

    @property
    def compared(self) -> int:
        return sum(1 for d in self.deviations or () if d.status != "unknown")


@dataclasses.dataclass(frozen=True, kw_only=True)
class HostSummary(Record):
    """A host's row of fleet.json."""
    host: str
    status: str
    message: str
    hostname: str | None
    counts: Counts | None
    plan_error: str | None
    deviations: int
    compared: int
    file: str

    NULLABLE = frozenset({"hostname", "counts", "plan_error"})


@dataclasses.dataclass(frozen=True, kw_only=True)
class FleetDoc(Record):
    """fleet.json's document; `results` (every HOST.json) only in what fleet() returns."""
    format: int = FLEET_FORMAT
    inventory: str = ""
    limit: str | None = None
    ssh_config: str | None = None
    intent: JsonObject | None = None
    hosts: tuple[HostSummary, ...] = ()
    exit_code: int = 0
    results: tuple[HostResult, ...] | None = None

    NULLABLE = frozenset({"limit", "ssh_config"})


# -- the plan against the node ----------------------------------------------------------------------------------

def _row(setting: str, planned, actual, same: bool | None) -> Deviation:
    status = "unknown" if same is None else "same" if same else "differs"
    return Deviation(setting=setting, planned=str(planned), actual=str(actual), status=status)


def _cpus_text(cpus) -> str:
    return format_list(cpus) or "none"


def _norm(key: str, value: str) -> str:
    """A kernel argument's value as the kernel reads it: page sizes '1G' and '1GB' are the same (memparse)."""
    if key in ("default_hugepagesz", "hugepagesz"):
        m = re.fullmatch(r"([0-9]+)([KMG])B?", value, re.IGNORECASE)
        return f"{m.group(1)}{m.group(2).upper()}" if m else value
    return value


def _kernel_rows(plan: Plan, inv: Inventory) -> list[Deviation]:
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


def _or_unset(value: str | None) -> str:
    return "unset" if value is None else value


def _mask_text(cpus) -> str:
    return f"{to_mask(cpus)} (CPUs {_cpus_text(cpus)})" if cpus else "unset"


def _ovs_rows(plan: Plan, inv: Inventory) -> list[Deviation]:
    ovs = inv.ovs
    oc = {k: v.strip('"') for k, v in ovs.other_config.items()}
    known = OtherConfig.from_json(oc)
    rows = [_row("OVS dpdk-init", "true", _or_unset(known.dpdk_init), known.dpdk_init in ("true", "try")),
            _row("OVS pmd-cpu-mask", _mask_text(plan.pmd_cpus), _mask_text(ovs.pmd_cpus()),
                 set(plan.pmd_cpus) == set(ovs.pmd_cpus())),
            _row("OVS dpdk-lcore-mask", _mask_text(plan.housekeeping), _mask_text(ovs.lcore_cpus()),
                 set(plan.housekeeping) == set(ovs.lcore_cpus()))]
    have_mem = ovs.socket_mem()
    want_mem = [plan.socket_mem[n] for n in plan.nodes]
    rows.append(_row("OVS dpdk-socket-mem", plan.socket_mem_list(), _or_unset(known.dpdk_socket_mem),
                     have_mem is not None and have_mem + [0] * (len(want_mem) - len(have_mem)) == want_mem))
    m = re.search(r"(?:^|\s)-n\s*([0-9]{1,3})\b", known.dpdk_extra or "")
    rows.append(_row("OVS dpdk-extra -n (memory channels)", plan.memory_channels, m.group(1) if m else "unset",
                     bool(m) and int(m.group(1)) == plan.memory_channels))
    if plan.intent.per_port_memory:
        rows.append(_row("OVS per-port-memory", "true", _or_unset(known.per_port_memory),
                         known.per_port_memory == "true"))
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


def deviations(plan: Plan, inv: Inventory, ovs_note: str = "") -> list[Deviation]:
    """Every setting the plan makes, against the node (status same | differs | unknown).
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


def host_result(c: Collected, intent: Intent, tree: Path) -> HostOutcome:
    """HOST.json: {format, host, status, message, hostname, inventory, audit, plan, plan_error, deviations,
    collector_errors, counts}; status ok | unreachable | failed | error (the document could not be read)."""
    from .report import inventory_dict

    if c.status != "ok":
        return HostOutcome(host=c.host, status=c.status, message=c.message)
    try:
        doc = remote.parse(c.stdout, c.host)
        root, ovs, note = remote.load(doc, tree, c.host)
        inv = remote.inventory(root, ovs, f"ansible:{c.host}")
    except ZeroLossError as e:
        return HostOutcome(host=c.host, status="error", message=str(e))
    report = run(Context(inv, inv.ovs))
    report.notes.append(note)
    if inv.ovs is None:
        report.findings.insert(0, ovs_unread(note))
    sev = [f.severity for f in report.findings]
    out = HostResult(host=c.host, status=c.status, message=c.message, hostname=doc.hostname, tree=str(tree),
                     collector_errors=doc.errors, inventory=json.loads(json.dumps(inventory_dict(inv), default=str)),
                     audit=AuditDoc.from_json(remote.audit_dict(inv, report)),
                     counts=Counts(error=sev.count("error"), warning=sev.count("warning"), info=sev.count("info")))
    try:
        plan = make_plan(inv, intent)
    except ZeroLossError as e:
        return dataclasses.replace(out, plan_error=str(e), deviations=())
    doc_plan = {**dataclasses.asdict(plan), "pmd_cpus": list(plan.pmd_cpus)}  # as host plan --json writes it
    return dataclasses.replace(out, plan=json.loads(json.dumps(doc_plan, default=str)),
                               deviations=tuple(deviations(plan, inv, note)))


def exit_code(hosts: list[HostResult]) -> int:
    """1: a host unreachable, failed, unreadable or not plannable; 2: error-level findings; 0: neither. A host
    without OVS has nothing to plan: not a failure (its ovs-unreadable finding says what was not read)."""
    if any(h.status != "ok" or (h.plan_error and not h.ovs_unread) for h in hosts):
        return 1
    return 2 if any(h.counts and h.counts.error for h in hosts) else 0


def fleet(inventory: str, intent: Intent, output: Path | None = None, limit: str | None = None,
          ssh_config: str | None = None, ovs_rundir: str | None = None,
          progress: Callable[[str], None] | None = None, accept_new_host_keys: bool = False) -> dict:
    """fleet.json's document with every host's result in 'results'; with output, writes OUTPUT/HOST.json, the host's
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
            result = HostResult.from_json(host_result(c, intent, base / safe_name(c.host)).to_json())
            if output is None:
                result = dataclasses.replace(result, tree=None, keys=result.keys - {"tree"} if result.keys else None)
            else:
                write_text_atomic(output / f"{safe_name(c.host)}.json", json.dumps(result.to_json(), indent=1) + "\n")
            hosts.append(result)
    doc = FleetDoc(inventory=inventory, limit=limit, ssh_config=ssh_config, intent=dataclasses.asdict(intent),
                   hosts=tuple(_summary(h) for h in hosts), exit_code=exit_code(hosts))
    out = doc.to_json()
    if output is not None:
        write_text_atomic(output / "fleet.json", json.dumps(out, indent=1) + "\n")
    return {**out, "results": [h.to_json() for h in hosts]}


def _summary(h: HostResult) -> HostSummary:
    return HostSummary(host=h.host, status=h.status, message=h.message, hostname=h.hostname, counts=h.counts,
                       plan_error=h.plan_error, deviations=h.differing, compared=h.compared,
                       file=f"{safe_name(h.host)}.json")


def fleet_text(fleet_doc: dict) -> str:
    """The combined report: one row per host, then per host its findings and where it deviates from the plan."""
    doc = FleetDoc.from_json(fleet_doc)
    hosts = doc.results or ()
    states: dict[str, int] = {}
    for h in hosts:
        states[h.status] = states.get(h.status, 0) + 1
    limit = f" (--limit {doc.limit})" if doc.limit else ""
    out = [f"zeroloss host fleet: {doc.inventory}{limit}: {len(hosts)} host(s), "
           + ", ".join(f"{n} {s}" for s, n in sorted(states.items()))]
    rows = []
    for h in hosts:
        status = "no plan" if h.plan_error and not h.ovs_unread else h.status
        if h.ovs_unread:
            status += " (no OVS)"
        rows.append([h.host, status, *(str(n) if h.counts else "-" for _, n in (h.counts or Counts()).by_severity()),
                     f"{h.differing} of {h.compared}" if h.compared else "-"])
    out += ["", table(["host", "status", "errors", "warnings", "info", "plan deviations"], rows)]
    for h in hosts:
        out.append("")
        out += _host_lines(h, doc.ssh_config)
    out += ["", {0: "exit 0: every host collected, no error-level finding",
                 1: "exit 1: a host could not be collected or planned",
                 2: "exit 2: error-level findings"}[doc.exit_code]]
    return "\n".join(out)


def _host_lines(h: HostResult, ssh_config: str | None) -> list[str]:
    """One host's part of the report: its findings and where it deviates from the plan."""
    if h.status != "ok":
        out = [f"== {h.host}: {h.status.upper()}: {h.message}"]
        if h.status == "unreachable":
            out.append(f"  {unreachable_hint(h.host, ssh_config)}")
        return out
    counts = (h.counts or Counts()).by_severity()
    out = [f"== {h.host} (hostname {h.hostname or '?'}): "
           + ", ".join(f"{n} {s}{'s' if n != 1 and s != 'info' else ''}" for s, n in counts)]
    for f in h.audit.findings if h.audit else ():
        out.append(f"  {f.severity.upper():8} {f.rule}: {f.message}")
    if h.plan_error:
        out.append(f"  plan: none: no OVS was read, nothing to tune ({h.plan_error})" if h.ovs_unread else
                   f"  plan: not possible: {h.plan_error}")
        return out
    devs = [d for d in h.deviations or () if d.status != "same"]
    out.append(f"  plan vs node: {h.differing} of {h.compared} settings differ" + (":" if devs else ""))
    out += [f"    {d.setting}: plan {d.planned}, node {d.actual}" if d.status == "differs" else
            f"    {d.setting}: not compared ({d.actual})" for d in devs]
    for e in h.collector_errors or []:
        out.append(f"  collector: {e}")
    return out
