"""Telemetry of a trial: what every core the bench uses did (user, system, idle, iowait, IRQ, softirq, steal from
/proc/stat), the interrupts each of them took (/proc/interrupts, per IRQ, flagged on isolated cores), the page faults
of each DPDK process (/proc/PID/stat) and, for OVS, each PMD's iterations, cycles per packet, upcalls and vhost
queue fill (pmd-perf-show, pmd-stats-show and the ports' ovs_tx_retries, read by the DUT's probe).

Everything here is cumulative in the kernel: two snapshots around a trial give its figures. The parsers and the
arithmetic are pure (text in, records out) so that the same code reads this host and a lab node, whose files come
back over the remote agent (drivers/lab/labtelemetry.py); read_local() is the reader of this host.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zeroloss.loss.counters import Counters, PmdStats

from .interference import PROC, USER_HZ, ThreadRef, cpu_list
from .telemetryrecords import HostTexts, PerfReading, PmdTelemetry, TelemetryRecord, hist_top

SYS_CPU = Path("/sys/devices/system/cpu")
CPU_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
BUSY_FIELDS = ("user", "nice", "system", "irq", "softirq")  # the core ran something (ours or not)
# a process's label by the role of its threads (host.interference.ThreadRef.role)
PROC_ROLE = {"pmd": "ovs-vswitchd", "testpmd": "testpmd", "vnf": "vnf", "vcpu": "qemu", "zlgen": "zlgen"}


@dataclass(frozen=True)
class CpuTimes:
    """One CPU's line of /proc/stat in USER_HZ ticks (guest time is already inside user and nice)."""

    user: int
    nice: int
    system: int
    idle: int
    iowait: int
    irq: int
    softirq: int
    steal: int

    @property
    def total(self) -> int:
        return sum(getattr(self, f) for f in CPU_FIELDS)


def parse_cpu_times(text: str) -> dict[int, CpuTimes]:
    """/proc/stat: each CPU's ticks by kind (the 'cpuN' lines; the total line is left out)."""
    out: dict[int, CpuTimes] = {}
    for line in text.splitlines():
        m = re.match(r"cpu(\d+)\s+(.*)", line)
        if not m:
            continue
        v = [int(x) for x in m.group(2).split()[:len(CPU_FIELDS)]]
        if len(v) < 4:
            raise ValueError(f"/proc/stat line has {len(v)} fields, expected at least 4: {line!r}")
        v += [0] * (len(CPU_FIELDS) - len(v))  # old kernels: no iowait, irq, softirq or steal columns
        out[int(m.group(1))] = CpuTimes(*v)
    return out


@dataclass(frozen=True)
class Irq:
    """One line of /proc/interrupts: what raised it and its count on each CPU."""

    name: str
    per_cpu: Mapping[int, int]


def parse_irqs(text: str) -> dict[str, Irq]:
    """/proc/interrupts: per interrupt source (its number or its name such as LOC, RES) its count per CPU and what
    it is (the driver's name, or the kernel's words for a named one). ERR and MIS, one count for all, are left out."""
    lines = text.splitlines()
    if not lines:
        return {}
    cpus = [int(c[3:]) for c in lines[0].split() if c.startswith("CPU")]
    out: dict[str, Irq] = {}
    for line in lines[1:]:
        key, sep, rest = line.partition(":")
        cells = rest.split()
        if not sep or len(cells) < len(cpus) or not all(c.isdigit() for c in cells[:len(cpus)]):
            continue
        words = cells[len(cpus):]
        # a numbered source: chip, hardware IRQ and trigger, then the device(s); a named one: words
        name = " ".join(words[2:] if key.strip().isdigit() and len(words) > 2 else words)
        out[key.strip()] = Irq(name, dict(zip(cpus, (int(c) for c in cells[:len(cpus)]), strict=True)))
    return out


@dataclass(frozen=True)
class ProcStat:
    """The parts of /proc/PID/stat kept: the command name and the page faults (minor, major)."""

    comm: str
    minflt: int
    majflt: int


def parse_pid_stat(text: str) -> ProcStat:
    """/proc/PID/stat (proc(5)): comm is in parentheses and may hold spaces and parentheses, so the fields are read
    after its last ')'; minflt is field 10, majflt field 12."""
    head, sep, tail = text.rpartition(")")
    lpar = head.find("(")
    fields = tail.split()
    if not sep or lpar < 0 or len(fields) < 10:
        raise ValueError(f"not a /proc/PID/stat line: {text[:80]!r}")
    return ProcStat(head[lpar + 1:], int(fields[7]), int(fields[9]))


def parse_isolated(text: str) -> frozenset[int]:
    """/sys/devices/system/cpu/isolated: the CPUs isolated from the scheduler (isolcpus), often empty."""
    return frozenset(cpu_list(text))


@dataclass(frozen=True)
class ProcSample:
    role: str
    comm: str
    minflt: int
    majflt: int


@dataclass(frozen=True)
class Snapshot:
    """The counters of a host at time t (time.monotonic): its CPUs, its interrupts, the bench's processes, and
    which cores the bench uses (core -> the roles of the threads pinned there)."""

    t: float
    host: str
    cpus: Mapping[int, CpuTimes]
    irqs: Mapping[str, Irq]
    procs: Mapping[int, ProcSample]
    cores: Mapping[int, tuple[str, ...]]
    isolated: frozenset[int] = frozenset()


def files(pids: Iterable[int]) -> dict[str, str]:
    """The files a snapshot reads, by key: /proc/stat, /proc/interrupts, the isolated CPUs, each process's stat."""
    out = {"stat": "/proc/stat", "interrupts": "/proc/interrupts", "isolated": str(SYS_CPU / "isolated")}
    out.update({f"pid:{p}": f"/proc/{p}/stat" for p in pids})
    return out


def snapshot_of(texts: Mapping[str, str | None], cores: Mapping[int, Iterable[str]], procs: Mapping[int, str],
                t: float, host: str = "local") -> Snapshot:
    """A snapshot from the texts of files() (None: unreadable, as a process that is gone); procs: pid -> role."""
    pids: dict[int, ProcSample] = {}
    for pid, role in procs.items():
        text = texts.get(f"pid:{pid}")
        if text:
            s = parse_pid_stat(text)
            pids[pid] = ProcSample(role, s.comm, s.minflt, s.majflt)
    read = HostTexts.from_json(texts)
    return Snapshot(t, host, parse_cpu_times(read.stat or ""), parse_irqs(read.interrupts or ""),
                    pids, {c: tuple(sorted(set(r))) for c, r in cores.items()}, parse_isolated(read.isolated or ""))


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None


def roles_of(refs: Iterable[ThreadRef]) -> tuple[dict[int, list[str]], dict[int, str]]:
    """(core -> roles pinned there, pid -> role) of the bench's threads."""
    cores: dict[int, list[str]] = {}
    procs: dict[int, str] = {}
    for r in refs:
        if r.core is not None and r.role not in cores.setdefault(r.core, []):
            cores[r.core].append(r.role)
        procs.setdefault(r.pid, r.role)
    return cores, procs


def read_local(refs: Iterable[ThreadRef], extra_cores: Iterable[int] = (), proc: Path = PROC) -> Snapshot:
    """This host's snapshot for the given threads' cores and processes (and extra_cores, no role)."""
    cores, procs = roles_of(refs)
    for c in extra_cores:
        cores.setdefault(c, [])
    paths = files(procs)
    if proc != PROC:  # tests read a copy of /proc
        paths = {k: v.replace("/proc", str(proc), 1) if v.startswith("/proc/") else v for k, v in paths.items()}
    t = time.monotonic()
    return snapshot_of({k: _read(v) for k, v in paths.items()}, cores, procs, t)


def local_reader(threads: Callable[[], list[ThreadRef]], extra_cores: Iterable[int] = ()) -> Callable[[], Snapshot]:
    """A Probe.telemetry for a bench on this host: the threads asked at each reading (a restarted process has new
    ones)."""
    extra = tuple(extra_cores)
    return lambda: read_local(threads(), extra)


@dataclass(frozen=True)
class CoreTelemetry:
    """What one core did over a trial: ticks by kind, and the interrupts it took per source (nonzero)."""

    core: int
    roles: tuple[str, ...]
    isolated: bool
    ticks: Mapping[str, int]
    irqs: Mapping[str, int]

    @property
    def total(self) -> int:
        return sum(self.ticks.values())

    @property
    def interrupts(self) -> int:
        return sum(self.irqs.values())

    def pct(self, *kinds: str) -> float:
        """The share of the core's ticks spent in the given kinds, %."""
        return 100 * sum(self.ticks.get(k, 0) for k in kinds) / self.total if self.total else 0.0

    @property
    def busy_pct(self) -> float:
        return self.pct(*BUSY_FIELDS)


@dataclass(frozen=True)
class ProcTelemetry:
    pid: int
    role: str
    name: str
    minflt: int
    majflt: int


@dataclass(frozen=True)
class Telemetry:
    """A trial's telemetry: per core, per process and per OVS PMD (pmds, from pmd_telemetry)."""

    host: str
    window_s: float
    user_hz: int
    cores: tuple[CoreTelemetry, ...]
    procs: tuple[ProcTelemetry, ...]
    irq_names: Mapping[str, str] = field(default_factory=dict)
    pmds: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    vhost_tx_retries: Mapping[str, int] = field(default_factory=dict)

    def flags(self) -> list[str]:
        """Sentences naming isolated cores that took interrupts and processes that took major page faults."""
        out = []
        for c in self.cores:
            if c.isolated and c.interrupts:
                top = sorted(c.irqs.items(), key=lambda kv: -kv[1])[:3]
                out.append(f"isolated core {c.core} took {c.interrupts:,} interrupts ("
                           + ", ".join(f"{k} {v:,}" for k, v in top) + ")")
        out += [f"{p.name} (pid {p.pid}) took {p.majflt:,} major page faults" for p in self.procs if p.majflt]
        return out

    def to_json(self) -> dict[str, Any]:
        """The record kept with the trial: ticks and their shares (%, 0.1) per core, per process its faults."""
        return {"host": self.host, "window_s": round(self.window_s, 6), "user_hz": self.user_hz,
                "cores": [{"core": c.core, "roles": list(c.roles), "isolated": c.isolated, "ticks": dict(c.ticks),
                           "pct": {**{k: round(c.pct(k), 1) for k in CPU_FIELDS}, "busy": round(c.busy_pct, 1)},
                           "interrupts": c.interrupts, "irqs": dict(c.irqs)} for c in self.cores],
                "procs": [{"pid": p.pid, "role": p.role, "name": p.name, "minflt": p.minflt, "majflt": p.majflt}
                          for p in self.procs],
                "irq_names": dict(self.irq_names), "pmds": {k: dict(v) for k, v in self.pmds.items()},
                "vhost_tx_retries": dict(self.vhost_tx_retries), "flags": self.flags()}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Telemetry:
        """A stored record back (the report and explain read it); missing parts are empty."""
        r = TelemetryRecord.from_json(d)
        cores = tuple(CoreTelemetry(int(c.core), tuple(c.roles or ()), bool(c.isolated),
                                    {k: int(v) for k, v in (c.ticks or {}).items()},
                                    {k: int(v) for k, v in (c.irqs or {}).items()}) for c in r.cores)
        procs = tuple(ProcTelemetry(int(p.pid), str(p.role), str(p.name), int(p.minflt), int(p.majflt))
                      for p in r.procs)
        return cls(str(r.host), float(r.window_s), int(r.user_hz), cores, procs, dict(r.irq_names or {}),
                   dict(r.pmds or {}), dict(r.vhost_tx_retries or {}))


def delta(before: Snapshot, after: Snapshot, user_hz: int = USER_HZ) -> Telemetry:
    """The telemetry between two snapshots of one host: the bench's cores (as the later snapshot knows them) and its
    processes in both (a restarted one, with a new pid, is left out); counters that went back count as 0."""
    cores = []
    names: dict[str, str] = {}
    for c, roles in sorted(after.cores.items()):
        a, b = after.cpus.get(c), before.cpus.get(c)
        if a is None or b is None:
            continue
        ticks = {k: max(0, getattr(a, k) - getattr(b, k)) for k in CPU_FIELDS}
        irqs = {}
        for key, irq in after.irqs.items():
            was = before.irqs.get(key)
            n = irq.per_cpu.get(c, 0) - (was.per_cpu.get(c, 0) if was else 0)
            if n > 0:
                irqs[key] = n
                names[key] = irq.name
        cores.append(CoreTelemetry(c, roles, c in after.isolated, ticks, irqs))
    procs = []
    for pid, s in sorted(after.procs.items()):
        p = before.procs.get(pid)
        if p is not None:
            procs.append(ProcTelemetry(pid, s.role, s.comm, max(0, s.minflt - p.minflt), max(0, s.majflt - p.majflt)))
    return Telemetry(after.host, max(0.0, after.t - before.t), user_hz, tuple(cores), tuple(procs), names)


def _more(after: int, before: int) -> int:
    return max(0, int(after) - int(before))


def _pmd(a: PerfReading, b: PerfReading, pc: PmdStats | None) -> PmdTelemetry:
    """One PMD over a trial from two pmd_perf readings and its pmd-stats-show deltas (pc)."""
    its = _more(a.iterations, b.iterations)
    cycles = int(a.used_cycles) - int(b.used_cycles)
    hz = a.tsc_hz
    got = pc.packets_received if pc else 0
    qlen = hist_top(list(a.max_vhost_qlen or []), list(b.max_vhost_qlen or []))
    # the longest vhost queue an iteration saw: more than gt, at most le (None: no bound); written only when seen
    gt, le = qlen if qlen is not None else (None, None)
    return PmdTelemetry(
        iterations=its, busy_iterations=_more(a.busy_iterations, b.busy_iterations),
        idle_iterations=_more(a.idle_iterations, b.idle_iterations), rx_packets=_more(a.rx_packets, b.rx_packets),
        tx_packets=_more(a.tx_packets, b.tx_packets), upcalls=_more(a.upcalls, b.upcalls),
        lost_upcalls=_more(a.lost_upcalls, b.lost_upcalls),
        us_per_it=round(cycles / hz / its * 1e6, 4) if hz and its and cycles > 0 else None,
        cycles_per_pkt=round(pc.processing_cycles / got, 1) if pc and got > 0 and pc.processing_cycles is not None
        else None, max_vhost_qlen_gt=gt, max_vhost_qlen_le=le,
        keys=PmdTelemetry.WRITTEN | (PmdTelemetry.QLEN if qlen is not None else frozenset()))


def pmd_telemetry(perf_before: Mapping[str, Mapping[str, Any]], perf_after: Mapping[str, Mapping[str, Any]],
                  counters: Mapping[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """Per OVS PMD core over a trial, from two readings of dut.ovsstats.pmd_perf and the trial's counter deltas
    (counters['ovs']['pmds'] from pmd-stats-show): iterations (busy, idle), µs per iteration, RX/TX packets,
    cycles per packet (processing cycles over packets received, as OVS counts it), upcalls and lost upcalls, and
    the longest vhost queue an iteration saw (the bounds of its histogram bin: > max_vhost_qlen_gt and <=
    max_vhost_qlen_le, None past the last wall)."""
    c = Counters.of(counters)
    pmd_counts = c.ovs.pmds if c.ovs else {}
    out: dict[str, dict[str, Any]] = {}
    for core, a in sorted(perf_after.items()):
        b = perf_before.get(core)
        if b is not None:
            out[core] = _pmd(PerfReading.from_json(a), PerfReading.from_json(b), pmd_counts.get(core)).to_json()
    return out


def vhost_tx_retries(counters: Mapping[str, Any] | None) -> dict[str, int]:
    """Per OVS port the vhost TX retries over a trial (ovs_tx_retries in the counters' deltas), nonzero only."""
    c = Counters.of(counters)
    ports = (c.ovs.ports if c.ovs else None) or {}
    return {p: int(v.ovs_tx_retries) for p, v in sorted(ports.items()) if v.ovs_tx_retries}


def trial_record(before: Snapshot, after: Snapshot, perf_before: Mapping[str, Mapping[str, Any]] | None = None,
                 perf_after: Mapping[str, Mapping[str, Any]] | None = None,
                 counters: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A trial's `telemetry` as stored: the host's part between two snapshots, each PMD's from two pmd_perf readings
    and the counter deltas, the vhost ports' TX retries."""
    tel = delta(before, after)
    pmds = pmd_telemetry(perf_before, perf_after, counters) if perf_before and perf_after else {}
    out = Telemetry(tel.host, tel.window_s, tel.user_hz, tel.cores, tel.procs, tel.irq_names, pmds,
                    vhost_tx_retries(counters))
    return out.to_json()


def summary_lines(d: Mapping[str, Any]) -> list[str]:
    """A stored trial's telemetry in a few lines (zeroloss explain)."""
    tel = Telemetry.from_json(d)
    out = []
    if tel.cores:
        out.append(f"telemetry ({tel.host}, {tel.window_s:.2f} s): " + "; ".join(
            f"core {c.core}{'*' if c.isolated else ''} ({'/'.join(c.roles) or '-'}) busy {c.busy_pct:.0f} %, "
            f"sys {c.pct('system'):.0f} %, irq+softirq {c.pct('irq', 'softirq'):.1f} %, steal {c.pct('steal'):.1f} %, "
            f"{c.interrupts:,} interrupts" for c in tel.cores))
    if tel.procs:
        out.append("page faults (minor/major): " + ", ".join(f"{p.name} {p.minflt:,}/{p.majflt:,}"
                                                              for p in tel.procs))
    for k, v in tel.pmds.items():
        p = PmdTelemetry.from_json(v)
        head = f"core {k}" + (f" {p.cycles_per_pkt:g} cycles/pkt" if p.cycles_per_pkt is not None else "")
        us = f", {p.us_per_it:g} us/it" if p.us_per_it is not None else ""
        gt, le = p.max_vhost_qlen_gt, p.max_vhost_qlen_le
        q = False if gt is None else (f"> {gt}" if le is None else f"<= {le}")
        out.append(f"OVS PMD {head}: {p.iterations:,} iterations ({p.busy_iterations:,} busy){us}, "
                   f"{p.rx_packets:,} rx, {p.upcalls:,} upcalls ({p.lost_upcalls:,} lost)"
                   + ("" if q is False else f", longest vhost queue {q}"))
    if tel.vhost_tx_retries:
        out.append("vhost TX retries: " + ", ".join(f"{p} {n:,}" for p, n in tel.vhost_tx_retries.items()))
    out += [f"flag: {f}" for f in tel.flags()]
    return out
