"""The order OVS 3.1 meets ports and NUMA nodes in for `zeroloss rxq-plan`: datapath port numbers (from
`ovs-appctl dpif/show` or a loads file), the OVS hash build (given, or read from the installed package), and
the caveats whenever part of it is assumed."""

from __future__ import annotations

import dataclasses
import platform
import re
import shutil
import subprocess
from pathlib import Path

from zeroloss.core.errors import ZeroLossError

from .ovshash import BUILDS, numa_visit_order, numa_visit_orders, port_visit_order, shared_bucket
from .rxq import Pmd, Rxq, VisitOrder

DPIF_SHOW = ["ovs-appctl", "--timeout=5", "dpif/show"]
_BACKER = re.compile(r"^(\S+)@(\S+): ")
_PORT = re.compile(r"^\s+(\S+) (?:[0-9]+|none)/([0-9]{1,10}|none):")
# -march values that define __SSE4_2__ (gcc, x86): the x86-64-v2+ levels and Intel/AMD cores since Nehalem/Bulldozer
_SSE42_MARCH = re.compile(r"x86-64-v[234]|nehalem|westmere|sandybridge|ivybridge|haswell|broadwell|skylake.*|"
                          r"cannonlake|cascadelake|cooperlake|icelake.*|tigerlake|alderlake|rocketlake|"
                          r"sapphirerapids|graniterapids.*|emeraldrapids|meteorlake|arrowlake.*|lunarlake|"
                          r"pantherlake|diamondrapids|sierraforest|grandridge|clearwaterforest|silvermont|slm|"
                          r"goldmont.*|tremont|gracemont|knl|knm|corei7.*|core-avx.*|bdver[1-4]|btver2|znver[1-5]")


def parse_dpif_show(text: str, source: str = "the dpif/show text") -> dict[str, int]:
    """`ovs-appctl dpif/show` -> {port name: datapath (odp) port number} of the userspace (netdev@) datapath."""
    ports: dict[str, int] = {}
    netdev = seen = False
    for line in text.splitlines():
        m = _BACKER.match(line)
        if m:
            seen = True
            netdev = m.group(1) == "netdev"
            continue
        p = _PORT.match(line)
        if netdev and p and p.group(2) != "none":  # 'none': a patch port, not in the datapath
            ports[p.group(1)] = int(p.group(2))
    if not seen:
        raise ZeroLossError(f"{source} has no 'TYPE@NAME: hit:N missed:N' line", "give `ovs-appctl dpif/show` output")
    if not ports:
        raise ZeroLossError(f"{source} shows no port of a userspace (netdev@) datapath",
                            "rxq-plan is for OVS with DPDK (datapath_type=netdev)")
    return ports


def build_from_cflags(flags: str) -> str | None:
    """'sse42' when these compiler flags define __SSE4_2__ (lib/hash.h then uses CRC32C), 'plain' when they
    do not, None for -march=native (it depends on the build machine)."""
    build = "plain"
    for flag in flags.split():
        if flag in ("-msse4.2", "-msse4", "-mavx", "-mavx2", "-mavx512f"):
            build = "sse42"
        elif flag in ("-mno-sse4.2", "-mno-sse4", "-mno-sse4.1", "-mno-ssse3", "-mno-sse3", "-mno-sse2"):
            build = "plain"
        elif flag.startswith("-march="):
            arch = flag.partition("=")[2]
            build = None if arch == "native" else "sse42" if _SSE42_MARCH.fullmatch(arch) else "plain"
    return build


def detect_build(run=subprocess.run, which=shutil.which, machine=platform.machine,
                 cpuinfo: Path = Path("/proc/cpuinfo")) -> tuple[str, str, bool]:
    """The hash build of the installed ovs-vswitchd: (build, how it was found, assumed?). Read-only: the CPU flags
    and the package's recorded compiler flags (rpm OPTFLAGS); Debian packages build for the x86-64 baseline."""
    if machine() != "x86_64":
        return "plain", f"{machine()} host: lib/hash.h's CRC variant there is not modelled, plain assumed", True
    try:
        flags = next((line for line in cpuinfo.read_text().splitlines() if line.startswith("flags")), "")
    except OSError:
        flags = ""
    if flags and "sse4_2" not in flags.split():
        return "plain", "this CPU has no SSE4.2, so a running OVS cannot use the CRC32C hash", False
    binary = which("ovs-vswitchd") or next((p for p in ("/usr/sbin/ovs-vswitchd", "/usr/local/sbin/ovs-vswitchd")
                                            if Path(p).exists()), None)
    if binary is None:
        return "plain", "no ovs-vswitchd binary found, plain assumed", True

    def output(argv: list[str]) -> str | None:
        try:
            r = run(argv, capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return r.stdout.strip() if r.returncode == 0 else None

    opt = output(["rpm", "-q", "--qf", "%{NAME}-%{VERSION} %{OPTFLAGS}\\n", "-f", binary]) if which("rpm") else None
    if opt:
        package, _, cflags = opt.splitlines()[0].partition(" ")
        build = build_from_cflags(cflags)
        if build is None:
            return "plain", f"{package} was built with -march=native: its hash build is unknown, plain assumed", True
        if build == "sse42":
            return "sse42", f"{package} was built with SSE4.2 (rpm OPTFLAGS)", False
        return "plain", (f"{package}'s rpm OPTFLAGS show no SSE4.2 (flags its spec file adds itself do not show), "
                         "plain assumed"), True
    if which("dpkg") and output(["dpkg", "-S", binary]):
        return "plain", f"{binary} comes from a Debian package (built for the x86-64 baseline, no SSE4.2)", False
    return "plain", f"{binary} is not from a known package (a source build?), plain assumed", True


def number_ports(rxqs: list[Rxq], dp_ports: dict[str, int]) -> list[Rxq]:
    """The queues with their port's datapath port number as port_no (OVS's tie-break)."""
    return [dataclasses.replace(q, port_no=dp_ports[q.port]) if q.port in dp_ports else q for q in rxqs]


def visit_order(rxqs: list[Rxq], pmds: list[Pmd], dp_ports: dict[str, int] | None, build: str,
                build_note: str = "", build_assumed: bool = False, complete: bool = True) -> VisitOrder:
    """The modelled order, and a note for each assumption behind it. complete: dp_ports lists every port of the
    datapath (dpif/show does; port 0 is added either way)."""
    if build not in BUILDS:
        raise ZeroLossError(f"unknown OVS hash build '{build}'", f"use one of {', '.join(BUILDS)}")
    notes: list[str] = []
    if build_assumed:
        other = visit_order(rxqs, pmds, dp_ports, BUILDS[1 - BUILDS.index(build)], complete=complete)
        mine = visit_order(rxqs, pmds, dp_ports, build, complete=complete)
        if (other.ports, other.numas) != (mine.ports, mine.numas):  # else the build changes nothing here
            notes.append(f"OVS hash build: {build_note}; give --hash-build plain|sse42 if you know it")
    names = list(dict.fromkeys(q.port for q in rxqs))
    missing = [n for n in names if n not in (dp_ports or {})]
    ports = None
    if dp_ports and not missing:
        ports = tuple(n for n in port_visit_order(dp_ports, build) if n in names)
    if ports and len(ports) > 1:
        if not complete:
            notes.append("the datapath's other ports (bridges' own ports, non-DPDK ports) are not listed: the port "
                         "hash map's size, and so the port order, may differ (list them under 'datapath_ports')")
        if shared_bucket({dp_ports[n] for n in names}, build, len(set(dp_ports.values()) | {0})):
            notes.append("some of these ports share a hash bucket: their order assumes they were added in port "
                         "number order (true after ovs-vswitchd starts; ports deleted and re-added since change it)")
    elif ports is None and len(names) > 1:
        what = f"no datapath port number for {', '.join(missing[:4])}{' ...' if len(missing) > 4 else ''}"
        notes.append(f"{what}: ports are visited in input order, not OVS's hash order (give --dpif-show, or "
                     "'port_no' in the loads file)")
    nodes = sorted({p.numa for p in pmds})
    numas = tuple(numa_visit_order(nodes, build))
    others: tuple[tuple[int, ...], ...] = ()
    if shared_bucket(nodes, build):
        others = tuple(o for o in numa_visit_orders(nodes, build) if o != numas)
        every = "; ".join(", ".join(map(str, o)) for o in (numas, *others))
        notes.append(f"NUMA nodes {', '.join(map(str, nodes))} share hash buckets: the order OVS walks them in for "
                     "cross-NUMA polling follows its poll-thread map, which is seeded at random at each start of "
                     "ovs-vswitchd (lib/cmap.c), so it is random per start: "
                     + (f"{'at least ' if len(nodes) > 7 else ''}{len(others) + 1} orders are possible ({every})"
                        if others else "here every start gives the same order"))
    return VisitOrder(ports, numas, tuple(notes), others)
