"""`zeroloss host inventory|plan|audit` and `zeroloss rxq-plan`: register(sub) adds them to the main parser."""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import subprocess
import sys
from pathlib import Path

from zeroloss.cli.argtypes import whole_number
from zeroloss.errors import ZeroLossError
from zeroloss.fmt import table

PLAN_FORMATS = ["summary", "ovs-vsctl", "cmdline", "tuned", "tripleo", "edpm", "performance-profile", "flavor"]
FORMAT_HELP = " | ".join(PLAN_FORMATS) + " | all (default all): edpm = RHOSO 18 edpm-ansible variables, " \
    "performance-profile = an OpenShift PerformanceProfile"


def _list(text: str) -> tuple[str, ...]:
    return tuple(x.strip() for x in text.split(",") if x.strip())


_nonneg = whole_number(0)


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


def _cmd_cores(args: argparse.Namespace) -> int:
    from zeroloss.cores import lcore_set
    from zeroloss.host import coreprobe

    cores = sorted(lcore_set("--cores", args.cores))
    if len(cores) < 2:
        raise ZeroLossError(f"--cores {args.cores} names one core: give two or more")
    if not 1 <= args.rounds <= 100:
        raise ZeroLossError(f"--rounds {args.rounds} must be 1..100")
    reading = coreprobe.probe(cores, ms=100, rounds=args.rounds)
    if args.json:
        print(json.dumps(reading, indent=1))
    else:
        print(coreprobe.describe(reading))
        rows = [[str(c), f"{a:,.0f}", f"{t:,.0f}", f"{r:.2f}"]
                for c, a, t, r in zip(reading["cores"], reading["alone_mops"], reading["together_mops"],
                                      reading["ratio"], strict=True)]
        print(table(["core", "alone M ops/s", "together M ops/s", "together/alone"], rows))
    return 3 if reading["shared"] else 0


def _intent(args):
    from zeroloss.host.plan import Intent

    return Intent(ports=args.ports or (), mtu=args.mtu, pmd_cores_per_node=args.pmd_cores_per_node,
                  pmd_cores_other_nodes=args.pmd_cores_other_nodes, vm_memory_gb=args.vm_memory_gb,
                  host_reserve_gb=args.host_reserve_gb, rxq=args.rxq, descriptors=args.descriptors,
                  vhost_ports=args.vhost_ports, vhost_ring=args.vhost_ring, memory_channels=args.memory_channels,
                  socket_mem_formula=args.socket_mem_formula, socket_mem_mb=args.socket_mem,
                  per_port_memory=args.per_port_memory, low_latency=not args.keep_cstates,
                  pmd_auto_lb=not args.no_pmd_auto_lb)


def _cmd_plan(args: argparse.Namespace) -> int:
    from zeroloss.host.plan import make_plan
    from zeroloss.host.render import FORMATS, render

    inv, _ = _inventory(args, with_ovs=False)
    plan = make_plan(inv, _intent(args))
    if args.json:
        doc = dataclasses.asdict(plan)
        doc["pmd_cpus"] = list(plan.pmd_cpus)
        doc["rendered"] = {f: render(plan, f) for f in FORMATS}
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
    if args.json:
        from zeroloss.host.remote import audit_dict

        print(json.dumps(audit_dict(inv, report), indent=1))
    else:
        head = [f"zeroloss host audit: root {inv.root}; domain {args.domain_xml or 'none'}"]
        print(format_report(report, head))
    return report.exit_code


def _cmd_fleet(args: argparse.Namespace) -> int:
    from zeroloss.host.fleet import fleet, fleet_text

    def progress(line: str) -> None:
        print(f"  {line}", file=sys.stderr, flush=True)

    doc = fleet(args.inventory, _intent(args), Path(args.output) if args.output else None, args.limit,
                args.ssh_config, args.ovs_rundir, progress if sys.stderr.isatty() and not args.json else None)
    if args.json:
        print(json.dumps(doc, indent=1, default=str))
    else:
        print(fleet_text(doc))
    return doc["exit_code"]


PMD_RXQ_SHOW = ("ovs-appctl", "--timeout=5", "dpif-netdev/pmd-rxq-show")


def _read_text(spec: str, live: tuple[str, ...] = PMD_RXQ_SHOW, name: str = "pmd-rxq-show") -> tuple[str, str]:
    """The text of FILE, stdin ('-') or the live command's output, and how to name it; ZeroLossError when it is
    not UTF-8."""
    from zeroloss.host.ovsstate import read_utf8

    if spec == "-":
        stdin = getattr(sys.stdin, "buffer", None)  # a test may put a text stream there
        try:
            return (stdin.read().decode() if stdin else sys.stdin.read()), "stdin"
        except UnicodeDecodeError as e:
            raise ZeroLossError(f"stdin is not UTF-8 text (byte {e.start})", "pipe the command's text output") from None
    if spec == "live":
        from zeroloss.host.ovsstate import db_socket

        if not db_socket().exists():
            raise ZeroLossError(f"no OVS database socket at {db_socket()}", f"give a {name} file instead")
        argv = list(live)
        try:
            r = subprocess.run(argv, capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise ZeroLossError(f"`{' '.join(argv)}` failed: {e}", "is ovs-vswitchd running with DPDK?") from None
        if r.returncode:
            raise ZeroLossError(f"`{' '.join(argv)}` exited {r.returncode}: {r.stderr.strip()}")
        return r.stdout, f"live {name}"
    return read_utf8(spec), spec


def _rxq_order(args, pmds, rxqs, opts):
    """(queues numbered with their datapath port numbers, the modelled visit order, its JSON description)."""
    from zeroloss.host.rxqorder import DPIF_SHOW, detect_build, number_ports, parse_dpif_show, visit_order

    if args.dpif_show == "-" and "-" in (args.loads, args.pmd_rxq_show):
        raise ZeroLossError("stdin can feed only one input", "give --dpif-show as a file")
    dp_ports, complete = opts.get("dp_ports"), bool(opts.get("dp_ports_complete"))
    live = "live" in (args.pmd_rxq_show, args.dpif_show)
    if args.dpif_show or (args.pmd_rxq_show == "live" and not dp_ports):
        try:
            text, where = _read_text(args.dpif_show or "live", tuple(DPIF_SHOW), "dpif/show")
            dp_ports, complete = parse_dpif_show(text, where), True
        except ZeroLossError:
            if args.dpif_show:
                raise  # given explicitly; read along with a live pmd-rxq-show only when it can be
    if args.hash_build != "auto":
        build, how, assumed = args.hash_build, "given with --hash-build", False
    elif live:
        build, how, assumed = detect_build()
    else:
        build, how, assumed = "plain", "not read from a live OVS, plain assumed", True
    if dp_ports:
        rxqs = number_ports(rxqs, dp_ports)
    order = visit_order(rxqs, pmds, dp_ports, build, how, assumed, complete)
    doc = {"ports": list(order.ports) if order.ports is not None else None, "numas": list(order.numas),
           "hash_build": build, "hash_build_source": how, "dp_ports": dp_ports, "assumptions": list(order.notes)}
    return rxqs, order, doc


def _cmd_rxq(args: argparse.Namespace) -> int:
    from zeroloss.host.ovsstate import parse_pmd_rxq_show
    from zeroloss.host.report import alb_lines, assignment_text, compare_rows
    from zeroloss.host.rxq import ALGORITHMS, alb_estimate, assign, from_assignment, split_queues
    from zeroloss.host.rxqinput import parse_loads, parse_pmds

    if bool(args.loads) == bool(args.pmd_rxq_show):
        raise ZeroLossError("give exactly one of --loads FILE and --pmd-rxq-show FILE|-|live")
    current = None
    notes: list[str] = []
    if args.loads:
        text, source = _read_text(args.loads)
        pmds, rxqs, opts = parse_loads(text, source)
    else:
        from zeroloss.host.rxqinput import from_pmd_rxq_show

        text, source = _read_text(args.pmd_rxq_show)
        port_numa = {}
        for item in _list(args.port_numa or ""):
            name, _, node = item.partition("=")
            if not re.fullmatch(r"-?[0-9]{1,4}", node):
                raise ZeroLossError(f"'{item}' in --port-numa is not NAME=NODE", "e.g. --port-numa dpdk0=0,dpdk1=1")
            port_numa[name] = int(node)
        pmds, rxqs, placed, notes = from_pmd_rxq_show(parse_pmd_rxq_show(text, source), port_numa)
        current = from_assignment(placed)
        opts = {}
    if args.pmds:
        pmds = parse_pmds(args.pmds, {p.core: p.numa for p in pmds})
    if not pmds:
        raise ZeroLossError(f"{source} names no PMD", "add 'pmds:' to the file or give --pmds")
    algorithm = args.algorithm or opts.get("algorithm") or "cycles"
    isolate = bool(opts.get("isolate", True)) and not args.no_isolate
    rxqs, order, order_doc = _rxq_order(args, pmds, rxqs, opts)
    chosen = assign(pmds, rxqs, algorithm, isolate, order)
    cases = [(f"{a}{' (chosen)' if a == algorithm else ''}", assign(pmds, rxqs, a, isolate, order))
             for a in ALGORITHMS]
    if current is not None:
        cases.insert(0, ("current (pmd-rxq-show)", current))
    for n in args.rxq or [1, 2, 4]:
        cases.append((f"{algorithm}, {n} rxq/port", assign(pmds, split_queues(rxqs, n), algorithm, isolate, order)))
    alb = alb_estimate(current, chosen) if current is not None else []
    if args.json:
        doc = {"source": source, "algorithm": algorithm, "isolate": isolate, "notes": notes, "visit_order": order_doc,
               "assignment": dataclasses.asdict(chosen),
               "compare": [{"case": n, "assignment": dataclasses.asdict(a)} for n, a in cases], "auto_lb": alb}
        print(json.dumps(doc, indent=1))
        return 0
    ports = len({q.port for q in rxqs})
    print(f"{source}: {len(rxqs)} RX queue(s) on {ports} port(s), {len(pmds)} PMD(s); OVS 3.1 "
          f"pmd-rxq-assign={algorithm}, pmd-rxq-isolate={'true' if isolate else 'false'}")
    print(assignment_text(chosen))
    for line in chosen.log:
        print(f"  {line}")
    print("\nother algorithms and queue counts (queues split evenly, as RSS aims for):")
    print(compare_rows(cases))
    if alb:
        print("\nauto load balance (pmd-auto-lb) estimate against the current placement:")
        print("\n".join(alb_lines(alb)))
    if order_doc["ports"] and len(order_doc["ports"]) > 1 or len(order.numas) > 1:
        print(f"\nOVS visit order ({order_doc['hash_build']} hash: {order_doc['hash_build_source']}): ports "
              f"{', '.join(order.ports) if order.ports else 'as input'}; NUMA nodes {', '.join(map(str, order.numas))}")
    for n in notes:
        print(f"note: {n}")
    for n in order.notes:
        print(f"caveat: {n}")
    return 0


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
    p.add_argument("--mtu", type=int, default=1500, metavar="BYTES", help="mtu_request of the DPDK ports, L3 bytes "
                   "(frames are MTU + 18 B; default 1500)")
    p.add_argument("--pmd-cores-per-node", type=int, default=1, metavar="N",
                   help="physical cores (all their threads) for PMDs on each node with DPDK ports (default 1)")
    p.add_argument("--pmd-cores-other-nodes", type=_nonneg, default=1, metavar="N",
                   help="PMD cores on nodes without DPDK ports (default 1, as TripleO)")
    p.add_argument("--vm-memory-gb", type=_nonneg, metavar="GB",
                   help="guest memory per NUMA node in GB of 1 GB pages (default: node memory - host reserve - OVS)")
    p.add_argument("--host-reserve-gb", type=_nonneg, default=4, metavar="GB",
                   help="memory per node kept for the host, GB (default 4)")
    p.add_argument("--rxq", type=int, metavar="N", help="RX queues per DPDK port (default 2)")
    p.add_argument("--descriptors", type=int, default=4096, metavar="N",
                   help="n_rxq_desc and n_txq_desc, a power of 2 up to 4096 (default 4096)")
    p.add_argument("--vhost-ports", type=_nonneg, default=0, metavar="N",
                   help="vhost-user ports per node with DPDK ports, for the OVS mempool model (default 0)")
    p.add_argument("--vhost-ring", type=int, default=1024, metavar="N", help="guest virtio ring size (default 1024)")
    p.add_argument("--memory-channels", type=int, metavar="N", help="memory channels per socket (default: from DMI, "
                   "else 4)")
    p.add_argument("--socket-mem-formula", choices=["tripleo", "per-port"], default="tripleo",
                   help="dpdk-socket-mem from distinct MTUs per node (tripleo, default) or from every port (per-port)")
    p.add_argument("--socket-mem", type=int, metavar="MB", help="use this dpdk-socket-mem (MB) on nodes with DPDK "
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
    c.add_argument("--rounds", type=int, default=5, metavar="N", help="rounds, the median is kept (default 5)")
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
    a.add_argument("--flows", type=_nonneg, metavar="N", help="flows per port the host carries (a single RX queue "
                   "is flagged for more than 1)")
    a.add_argument("--vm-memory-gb", type=_nonneg, default=0, metavar="GB",
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
    f.add_argument("--json", action="store_true", help="print JSON only (fleet.json with every host's result)")
    _add_intent(f)
    f.set_defaults(func=_cmd_fleet)

    r = sub.add_parser("rxq-plan", help="simulate OVS 3.1's RX queue to PMD assignment",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       description="Places RX queues on PMD threads as OVS 3.1 does (roundrobin, cycles, group; "
                                   "pinned queues and isolation; cross-NUMA fallback), prints per-PMD queues and "
                                   "load (% of one PMD), and compares other algorithms and queue counts. With "
                                   "pmd-rxq-show input it also estimates what auto load balance would do.",
                       epilog="--loads file (YAML or JSON):\n  pmds: {3: 0, 7: 0, 8: 0}   # core: NUMA node\n"
                              "  ports:\n    - {name: dpdk0, numa: 0, loads: [30, 80, 60, 70, 10]}   "
                              "# % of one PMD per queue\n"
                              "    - {name: vhu0, numa: 0, loads: {0: 20}, affinity: \"0:8\"}")
    src = r.add_mutually_exclusive_group()
    src.add_argument("--loads", metavar="FILE", help="queue loads (YAML/JSON, see below; - = stdin)")
    src.add_argument("--pmd-rxq-show", metavar="FILE|-|live",
                     help="output of ovs-appctl dpif-netdev/pmd-rxq-show (- = stdin, live = run it read-only)")
    r.add_argument("--algorithm", choices=["roundrobin", "cycles", "group"],
                   help="pmd-rxq-assign to simulate (default: the file's, else cycles as OVS)")
    r.add_argument("--pmds", metavar="CORE[:NODE],...", help="simulate these PMD cores instead of the input's")
    r.add_argument("--rxq", type=int, action="append", metavar="N",
                   help="what-if queue count per port (repeatable; default 1, 2 and 4)")
    r.add_argument("--no-isolate", action="store_true", help="pmd-rxq-isolate=false (only honoured with group)")
    r.add_argument("--port-numa", metavar="NAME=NODE,...", help="NUMA node of ports in pmd-rxq-show input")
    r.add_argument("--dpif-show", metavar="FILE|-|live", help="output of ovs-appctl dpif/show: the datapath port "
                   "numbers that set OVS's port order (read live along with --pmd-rxq-show live)")
    r.add_argument("--hash-build", choices=["auto", "plain", "sse42"], default="auto",
                   help="OVS's hash functions: plain, or sse42 (built with SSE4.2, e.g. -march=x86-64-v2: CRC32C); "
                        "auto = from the installed package when reading live, else plain (default auto)")
    r.add_argument("--json", action="store_true", help="print JSON only")
    r.set_defaults(func=_cmd_rxq)
