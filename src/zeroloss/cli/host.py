"""`zeroloss host inventory|plan|audit|cores|fleet` and `zeroloss rxq-plan` (cli/rxqplan.py): register(sub) adds them
to the main parser."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from dataclasses import dataclass
from pathlib import Path

from zeroloss.cli.argtypes import whole_number
from zeroloss.core.codec import Record
from zeroloss.core.errors import ZeroLossError
from zeroloss.results.fmt import table

PLAN_FORMATS = ["summary", "ovs-vsctl", "cmdline", "tuned", "tripleo", "edpm", "performance-profile", "flavor", "k8s"]
FORMAT_HELP = " | ".join(PLAN_FORMATS) + " | all (default all): edpm = RHOSO 18 edpm-ansible variables, " \
    "performance-profile = an OpenShift PerformanceProfile, k8s = the CNF's manifests (PerformanceProfile, " \
    "SriovNetworkNodePolicy and NetworkAttachmentDefinition per port, testpmd Pod), schema-checked; not in all"


def _list(text: str) -> tuple[str, ...]:
    return tuple(x.strip() for x in text.split(",") if x.strip())


def _bound(name: str):
    """An argparse type for the plan intent `name`: a whole number within plan.BOUNDS (read when the flag is given,
    so that every command does not import the planner)."""

    def parse(text: str) -> int:
        from zeroloss.host.plan import BOUNDS

        return whole_number(*BOUNDS[name])(text)

    return parse


def _ocp(text: str) -> str:
    """--ocp-version: an OpenShift release X.Y."""
    from zeroloss.host.render_deploy import ocp_version

    try:
        ocp_version(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def _ring(text: str) -> int:
    """--vhost-ring: one of the virtio ring sizes TripleO and nova accept."""
    from zeroloss.host.plan import VHOST_RINGS

    value = whole_number()(text)
    if value not in VHOST_RINGS:
        raise argparse.ArgumentTypeError(f"{value} is not one of {', '.join(map(str, VHOST_RINGS))} (the ring sizes "
                                         "TripleO's NovaLibvirtRxQueueSize and nova accept)")
    return value


def _root(args):
    from zeroloss.host.sysfs import Root

    return Root(args.root or "/")


def _read_ovs(args, root):
    """OVS state by --ovs-state: auto (live on '/', the root's ovs/ directory on a captured tree), live, none, DIR."""
    from zeroloss.host.ovsstate import read_captured, read_live

    mode = args.ovs_state
    if mode == "none":
        return None, "OVS not read (--ovs-state none)"
    if mode not in ("auto", "live"):
        return read_captured(mode), f"OVS state captured in {mode}"
    if mode == "live" or root.live:
        return read_live()
    captured = root.path / "ovs"
    if captured.is_dir():
        return read_captured(captured), f"OVS state captured in {captured}"
    return None, f"no OVS state (no {captured} directory): OVS rules skipped"


def _inventory(args, with_ovs: bool = True):
    from zeroloss.host.inventory import collect

    if getattr(args, "host", None):
        return _remote_inventory(args, with_ovs)
    if args.ssh_config or args.ovs_rundir:
        raise ZeroLossError("--ssh-config and --ovs-rundir go with --host", "add --host TARGET, or drop them")
    root = _root(args)
    ovs, note = _read_ovs(args, root) if with_ovs else (None, "")
    return collect(root, ovs), note


def _remote_inventory(args, with_ovs: bool):
    """--host: collect.py runs there over one ssh login; its tree is read here from a temporary directory."""
    import tempfile

    from zeroloss.host import remote
    from zeroloss.host.ovsstate import read_captured
    from zeroloss.host.ssh import SshTarget, check_destination

    check_destination(args.host, "--host")
    target = SshTarget(args.host, ssh_config=args.ssh_config)
    doc = remote.run_collector(target, args.ovs_rundir)
    with tempfile.TemporaryDirectory(prefix="zeroloss-host-") as tmp:
        root, ovs, note = remote.load(doc, Path(tmp) / "tree", args.host)
        mode = getattr(args, "ovs_state", "none") if with_ovs else "none"
        if mode == "none":
            ovs, note = None, "OVS not read (--ovs-state none)" if with_ovs else ""
        elif mode not in ("auto", "live"):
            ovs, note = read_captured(mode), f"OVS state captured in {mode}"
        return remote.inventory(root, ovs, f"ssh:{args.host}"), note


def _cmd_inventory(args: argparse.Namespace) -> int:
    from zeroloss.host.report import inventory_dict, inventory_text

    inv, note = _inventory(args)
    if args.json:
        print(json.dumps(inventory_dict(inv), indent=1, default=str))
    else:
        print(inventory_text(inv))
        print(f"note: {note}")
    return 0


@dataclass(frozen=True, kw_only=True)
class Reading(Record):
    """zlcores' reading of the cores (drivers/probe/coreprobe.py probe): per core alone and together, their ratio,
    and whether any core was shared."""

    cores: tuple[int, ...] = ()
    alone_mops: tuple[float, ...] = ()
    together_mops: tuple[float, ...] = ()
    ratio: tuple[float, ...] = ()
    shared: bool = False


def _cmd_cores(args: argparse.Namespace) -> int:
    from zeroloss.core.cores import lcore_set
    from zeroloss.drivers.probe import coreprobe

    cores = sorted(lcore_set("--cores", args.cores))
    if len(cores) < 2:
        raise ZeroLossError(f"--cores {args.cores} names one core: give two or more")
    if not 1 <= args.rounds <= 100:
        raise ZeroLossError(f"--rounds {args.rounds} must be 1..100")
    reading = coreprobe.probe(cores, ms=100, rounds=args.rounds)
    r = Reading.from_json(reading)
    if args.json:
        print(json.dumps(reading, indent=1))
    else:
        print(coreprobe.describe(reading))
        rows = [[str(c), f"{a:,.0f}", f"{t:,.0f}", f"{x:.2f}"]
                for c, a, t, x in zip(r.cores, r.alone_mops, r.together_mops, r.ratio, strict=True)]
        print(table(["core", "alone M ops/s", "together M ops/s", "together/alone"], rows))
    return 3 if r.shared else 0


def _intent(args):
    from zeroloss.host.plan import Intent

    return Intent(ports=args.ports or (), mtu=args.mtu, pmd_cores_per_node=args.pmd_cores_per_node,
                  pmd_cores_other_nodes=args.pmd_cores_other_nodes, vm_memory_gb=args.vm_memory_gb,
                  host_reserve_gb=args.host_reserve_gb, rxq=args.rxq, descriptors=args.descriptors,
                  vhost_ports=args.vhost_ports, vhost_ring=args.vhost_ring, memory_channels=args.memory_channels,
                  socket_mem_formula=args.socket_mem_formula, socket_mem_mb=args.socket_mem,
                  per_port_memory=args.per_port_memory, low_latency=not args.keep_cstates,
                  pmd_auto_lb=not args.no_pmd_auto_lb, ocp_version=getattr(args, "ocp_version", None) or "")


def _cmd_plan(args: argparse.Namespace) -> int:
    from zeroloss.host.plan import make_plan
    from zeroloss.host.render import FORMATS, render

    inv, _ = _inventory(args, with_ovs=False)
    plan = make_plan(inv, _intent(args))
    if args.json:
        doc = {**dataclasses.asdict(plan), "pmd_cpus": list(plan.pmd_cpus),
               "rendered": {f: render(plan, f) for f in FORMATS}}
        print(json.dumps(doc, indent=1, default=str))
        return 0
    print(render(plan, args.format))
    return 0


def _cmd_audit(args: argparse.Namespace) -> int:
    from zeroloss.host.audit import Context, format_report, run
    from zeroloss.host.domxml import parse_domain

    inv, note = _inventory(args)
    domain = None
    if args.domain_xml:
        path = Path(args.domain_xml)
        try:
            data = path.read_bytes()  # bytes: the XML parser honours the encoding the file declares
        except OSError as e:
            raise ZeroLossError(f"cannot read --domain-xml {path}: {e.strerror}", "give virsh dumpxml output") from None
        domain = parse_domain(data, str(path))
    report = run(Context(inv, inv.ovs, domain, flows=args.flows, vm_memory_gb=args.vm_memory_gb))
    report.notes.append(note)
    if args.host and inv.ovs is None and args.ovs_state != "none":  # OVS down there is a finding, not "0 errors"
        from zeroloss.host.fleet import ovs_unread

        report.findings.insert(0, ovs_unread(note))
    if args.json:
        from zeroloss.host.remote import audit_dict

        print(json.dumps(audit_dict(inv, report), indent=1))
    else:
        head = [f"zeroloss host audit: root {inv.root}; domain {args.domain_xml or 'none'}"]
        print(format_report(report, head))
    return report.exit_code


def _cmd_fleet(args: argparse.Namespace) -> int:
    from zeroloss.host.fleet import FleetDoc, fleet, fleet_text

    def progress(line: str) -> None:
        print(f"  {line}", file=sys.stderr, flush=True)

    doc = fleet(args.inventory, _intent(args), Path(args.output) if args.output else None, args.limit,
                args.ssh_config, args.ovs_rundir, progress if sys.stderr.isatty() and not args.json else None,
                args.accept_new_host_keys)
    if args.json:
        print(json.dumps(doc, indent=1, default=str))
    else:
        print(fleet_text(doc))
    return FleetDoc.from_json(doc).exit_code


def _add_root(p: argparse.ArgumentParser, ovs: bool = True) -> None:
    where = p.add_mutually_exclusive_group()
    where.add_argument("--root", metavar="DIR",  # default None, so that '--root / --host X' is refused
                       help="read sys/ and proc/ under DIR instead of / (a captured tree, e.g. "
                            "tests/fixtures/host/r740xd)")
    where.add_argument("--host", metavar="TARGET",
                       help="read a remote host over OpenSSH instead: a Host of your ssh config or [user@]host; one "
                            "login runs a read-only collector with python3 there, as root (sudo -n unless root)")
    p.add_argument("--ssh-config", metavar="FILE", help="with --host: this ssh client config instead of ~/.ssh/config")
    if ovs:
        p.add_argument("--ovs-state", default="auto", metavar="auto|live|none|DIR",
                       help="OVS other_config, interfaces and pmd-rxq-show: auto = live read-only ovs-vsctl/ovs-appctl "
                            "on / (or on --host), the root's ovs/ directory otherwise; DIR = captured outputs "
                            "(default auto)")
    p.add_argument("--ovs-rundir", metavar="DIR", help="with --host: the OVS run directory holding db.sock there "
                   "(default $OVS_RUNDIR or /var/run/openvswitch)")
    p.add_argument("--json", action="store_true", help="print JSON only")


def _add_intent(p: argparse.ArgumentParser) -> None:
    """The operator's intent for a plan (host plan, host fleet)."""
    p.add_argument("--ports", type=_list, metavar="PCI|NAME,...",
                   help="DPDK ports by PCI address or interface name (default: NICs bound to vfio-pci)")
    p.add_argument("--mtu", type=_bound("mtu"), default=1500, metavar="BYTES",
                   help="mtu_request of the DPDK ports, L3 bytes "
                   "(frames are MTU + 18 B; default 1500)")
    p.add_argument("--pmd-cores-per-node", type=_bound("pmd_cores_per_node"), default=1, metavar="N",
                   help="physical cores (all their threads) for PMDs on each node with DPDK ports (default 1)")
    p.add_argument("--pmd-cores-other-nodes", type=_bound("pmd_cores_other_nodes"), default=1, metavar="N",
                   help="PMD cores on nodes without DPDK ports (default 1, as TripleO)")
    p.add_argument("--vm-memory-gb", type=_bound("vm_memory_gb"), metavar="GB",
                   help="guest memory per NUMA node in GB of 1 GB pages (default: node memory - host reserve - OVS)")
    p.add_argument("--host-reserve-gb", type=_bound("host_reserve_gb"), default=4, metavar="GB",
                   help="memory per node kept for the host, GB (default 4)")
    p.add_argument("--rxq", type=_bound("rxq"), metavar="N", help="RX queues per DPDK port (default 2)")
    p.add_argument("--descriptors", type=_bound("descriptors"), default=4096, metavar="N",
                   help="n_rxq_desc and n_txq_desc, a power of 2 up to 4096 (default 4096)")
    p.add_argument("--vhost-ports", type=_bound("vhost_ports"), default=0, metavar="N",
                   help="vhost-user ports per node with DPDK ports, for the OVS mempool model (default 0)")
    p.add_argument("--vhost-ring", type=_ring, default=1024, metavar="N",
                   help="guest virtio ring size: 256, 512 or 1024 (default 1024)")
    p.add_argument("--memory-channels", type=_bound("memory_channels"), metavar="N",
                   help="memory channels per socket, 1..16 (default: from DMI, "
                   "else 4)")
    p.add_argument("--socket-mem-formula", choices=["tripleo", "per-port"], default="tripleo",
                   help="dpdk-socket-mem from distinct MTUs per node (tripleo, default) or from every port (per-port)")
    p.add_argument("--socket-mem", type=_bound("socket_mem_mb"), metavar="MB",
                   help="use this dpdk-socket-mem (MB) on nodes with DPDK "
                   "ports instead of a formula; the plan warns if OVS's mempools would not fit")
    p.add_argument("--per-port-memory", action="store_true", help="plan for OVS other_config:per-port-memory=true")
    p.add_argument("--keep-cstates", action="store_true", help="do not limit C-states on the kernel command line")
    p.add_argument("--no-pmd-auto-lb", action="store_true", help="leave OVS PMD auto load balance off")


def register(sub) -> None:
    """Add `host` (inventory, plan, audit, fleet) and `rxq-plan` to the main parser's subcommands."""
    h = sub.add_parser("host", help="host tuning for OVS-DPDK: inventory, plan, audit, fleet",
                       description="Reads the host model from sysfs/procfs, derives the OVS-DPDK tuning (CPU "
                                   "partitioning, hugepages, socket memory, queues) and audits a host against it.")
    hs = h.add_subparsers(dest="host_command", metavar="SUBCOMMAND", required=True)

    i = hs.add_parser("inventory", help="NUMA nodes, CPUs, memory and hugepages, NICs, isolation, IRQs, OVS",
                      description="Prints the host model: nodes (memory GiB, hugepages per size: configured/free), "
                                  "cores and sibling threads, NICs (PCI, driver, NUMA node, Gb/s, MTU), kernel "
                                  "command line, isolated/nohz_full CPUs, IRQ affinity, power states, DIMMs, OVS.")
    _add_root(i)
    i.set_defaults(func=_cmd_inventory)

    c = hs.add_parser("cores", help="do these cores run independently, or share a physical core? (measured)",
                      description="Times each core alone, then all together, on an integer kernel (zlcores). "
                                  "Together/alone is about 1.00 on separate physical cores and about 0.5 on two "
                                  "hardware threads of one core (SMT siblings) or two vCPUs a hypervisor runs on one "
                                  "CPU; below 0.65 they are called shared. Use it for the cores you mean to give "
                                  "PMD threads or a generator: a guest's CPU topology cannot tell. Run it while "
                                  "nothing else polls those cores. Exit status 3 when shared.")
    c.add_argument("--cores", required=True, metavar="LIST", help="two or more cores, DPDK -l syntax (e.g. 0,1 or 2-5)")
    c.add_argument("--rounds", type=whole_number(1, 100), default=5, metavar="N",
                   help="rounds, the median is kept (default 5)")
    c.add_argument("--json", action="store_true", help="print the reading as JSON")
    c.set_defaults(func=_cmd_cores)

    p = hs.add_parser("plan", help="derive OVS-DPDK host settings, each with its reason",
                      description="Plans CPU partitioning (housekeeping, PMD, VM CPUs), 1 GB hugepages per node, "
                                  "dpdk-socket-mem (TripleO distinct-MTU and per-port formulas, and OVS's own mempool "
                                  "model), memory channels, RX queues, descriptors, vhost ring and emulator policy, "
                                  "rendered as ovs-vsctl commands, kernel arguments, tuned variables, a TripleO "
                                  "environment, RHOSO 18 EDPM variables, an OpenShift PerformanceProfile and flavor "
                                  "properties. Memory in MB (socket memory) or GB (pages).")
    _add_root(p, ovs=False)
    _add_intent(p)
    p.add_argument("--format", choices=[*PLAN_FORMATS, "all"], default="all", help=FORMAT_HELP)
    p.add_argument("--ocp-version", type=_ocp, metavar="X.Y", help="the OpenShift release the PerformanceProfile is "
                   "for: from 4.23 the PMD CPUs go to spec.cpu.ovsDpdk (default: not given, the pre-4.23 layout)")
    p.set_defaults(func=_cmd_plan)

    a = hs.add_parser("audit", help="check a host against the OVS-DPDK zero-loss practices (exit 0 clean, 2 findings)",
                      description="Checks isolation, PMD placement and NUMA, hugepages, socket memory, descriptors, "
                                  "RX queues, IRQs (affinity and counts), nohz_full/rcu_nocbs, IOMMU, power states, "
                                  "PCIe links of the DPDK NICs, other processes on PMD CPUs, mixed datapaths, and "
                                  "(with --domain-xml) a guest's vhost rings, emulator pinning, hugepages and NUMA. "
                                  "Each finding shows its evidence, source and remedy. Exit 0: clean; 2: findings; 1: "
                                  "error.")
    _add_root(a)
    a.add_argument("--domain-xml", metavar="FILE", help="a guest's libvirt XML (virsh dumpxml VM)")
    a.add_argument("--flows", type=whole_number(0, 2**32), metavar="N",
                   help="flows per port the host carries (a single RX queue "
                   "is flagged for more than 1)")
    a.add_argument("--vm-memory-gb", type=_bound("vm_memory_gb"), default=0, metavar="GB",
                   help="guest memory still to be started per node with DPDK ports, GB (default 0)")
    a.set_defaults(func=_cmd_audit)

    f = hs.add_parser("fleet", help="inventory, audit and plan deviations of every host of an Ansible inventory",
                      description="Runs ansible/collect.yml through ansible-runner: each host runs zeroloss's "
                                  "read-only collector (python3 there, as root: become when the login is not root) "
                                  "and returns what the inventory reads. For each host: the audit's findings and the "
                                  "plan for the intent below (as `host plan`), compared setting by setting with the "
                                  "node (kernel arguments, 1 GB pages per node, OVS other_config, ports' MTU, queues "
                                  "and descriptors). An unreachable host is a row of the report, not a failure of "
                                  "the run.",
                      epilog="exit status: 0 every host collected and planned, no error-level finding; 1 a host was "
                             "unreachable, failed, or could not be planned for the intent (or the run itself "
                             "failed); 2 every host collected, error-level findings on one or more. With --output "
                             "DIR: DIR/HOST.json per host (inventory, audit, plan, deviations), "
                             "DIR/HOST/ (the host's tree: `zeroloss host audit --root DIR/HOST` reads it again) "
                             "and DIR/fleet.json.")
    f.add_argument("--inventory", "-i", required=True, metavar="INV",
                   help="Ansible inventory (INI or YAML file, or 'host1,host2,')")
    f.add_argument("--limit", "-l", metavar="PATTERN", help="only these hosts (Ansible --limit pattern)")
    f.add_argument("--output", "-o", metavar="DIR", help="write DIR/HOST.json, DIR/HOST/ and DIR/fleet.json "
                   "(default: print only)")
    f.add_argument("--ssh-config", metavar="FILE", help="ssh client config for every host (ansible_ssh_common_args "
                   "'-F FILE'; overrides the inventory's)")
    f.add_argument("--ovs-rundir", metavar="DIR", help="the OVS run directory on the hosts (default $OVS_RUNDIR or "
                   "/var/run/openvswitch)")
    f.add_argument("--accept-new-host-keys", action="store_true",
                   help="add the SSH host key of a host never seen to known_hosts (StrictHostKeyChecking=accept-new); "
                        "without it such a host is refused, as one whose key changed always is (ssh_args: "
                        "StrictHostKeyChecking, then $ANSIBLE_SSH_ARGS or Ansible's default)")
    f.add_argument("--json", action="store_true", help="print JSON only (fleet.json with every host's result)")
    _add_intent(f)
    f.set_defaults(func=_cmd_fleet)

    from zeroloss.cli.rxqplan import register as register_rxq

    register_rxq(sub)
