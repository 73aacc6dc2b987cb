"""Host interference around a trial, read from /proc: how long each poller thread waited for its core, and what
the host took from those cores (steal, IRQ, softirq, interrupts).

The kernel's per-task wait_max needs schedstats (sched_schedstats, /proc/PID/sched's se.statistics), which many
hosts (this one) do not have. What every Linux has is cumulative: /proc/PID/task/TID/schedstat (time on the CPU,
time runnable but waiting for it, timeslices), the thread's involuntary context switches, and /proc/stat's per-CPU
steal/IRQ/softirq ticks. Two snapshots around a trial give their differences. A busy poller alone on its core waits only
when preempted, so its run delay over its involuntary switches is its mean wait, a lower bound of its longest stall:
when that exceeds the time its RX ring covers, a stall surely overflowed it. Steal (the hypervisor's) is a sum,
the only reading there is. Pure parsers plus small readers.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PROC = Path("/proc")
USER_HZ = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

# a role's name in a sentence: "PMD core 1 stalled ..."
ROLE_LABEL = {"pmd": "PMD", "testpmd": "testpmd", "vnf": "VNF", "vcpu": "vCPU", "zlgen": "zlgen"}


@dataclass(frozen=True)
class ThreadRef:
    """A thread of a process the run started: its role (pmd, testpmd, vnf, vcpu, zlgen), ids, name and the one
    core it may run on (None when its affinity allows more than one)."""

    role: str
    pid: int
    tid: int
    name: str
    core: int | None


def cpu_list(text: str) -> list[int]:
    """The CPUs of a kernel CPU list such as '0-3,6' (Cpus_allowed_list, cpuset files)."""
    out: list[int] = []
    for part in text.strip().split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def parse_schedstat(text: str) -> tuple[int, int, int]:
    """/proc/PID/task/TID/schedstat: ns on the CPU, ns runnable but waiting for it (run delay), timeslices."""
    fields = text.split()
    if len(fields) < 3:
        raise ValueError(f"schedstat has {len(fields)} fields, expected 3: {text!r}")
    return int(fields[0]), int(fields[1]), int(fields[2])


def parse_status(text: str) -> dict[str, str]:
    """/proc/PID/task/TID/status as a mapping of its keys to their (stripped) values."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            out[key] = value.strip()
    return out


@dataclass(frozen=True)
class CpuTicks:
    """One CPU's line of /proc/stat, the parts the host takes from a poller: in USER_HZ ticks."""

    irq: int
    softirq: int
    steal: int


def parse_stat(text: str) -> dict[int, CpuTicks]:
    """/proc/stat: per CPU (the 'cpuN' lines, not the total) its irq, softirq and steal ticks."""
    out: dict[int, CpuTicks] = {}
    for line in text.splitlines():
        m = re.match(r"cpu(\d+)\s+(.*)", line)
        if not m:
            continue
        v = [int(x) for x in m.group(2).split()]
        v += [0] * (8 - len(v))  # kernels before 2.6.11 had no steal column
        out[int(m.group(1))] = CpuTicks(irq=v[5], softirq=v[6], steal=v[7])
    return out


def parse_interrupts(text: str) -> dict[int, int]:
    """/proc/interrupts: per CPU the sum of every interrupt source's count on it (lines with one count per
    CPU; ERR and MIS, with one total, are left out)."""
    lines = text.splitlines()
    if not lines:
        return {}
    cpus = [int(c[3:]) for c in lines[0].split() if c.startswith("CPU")]
    out = dict.fromkeys(cpus, 0)
    for line in lines[1:]:
        _, sep, rest = line.partition(":")
        counts = rest.split()[:len(cpus)]
        if not sep or len(counts) < len(cpus) or not all(c.isdigit() for c in counts):
            continue
        for cpu, count in zip(cpus, counts, strict=True):
            out[cpu] += int(count)
    return out


def _read(path: Path) -> str | None:
    """A /proc file's text, or None when its process or thread is gone."""
    try:
        return path.read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None


def thread(pid: int, tid: int, role: str, proc: Path = PROC) -> ThreadRef | None:
    """Thread tid of process pid as a ThreadRef (its comm and the one CPU it may run on), None when it is gone."""
    task = proc / str(pid) / "task" / str(tid)
    comm, status = _read(task / "comm"), _read(task / "status")
    if comm is None or status is None:
        return None
    cpus = cpu_list(parse_status(status).get("Cpus_allowed_list", ""))
    return ThreadRef(role, pid, tid, comm.strip(), cpus[0] if len(cpus) == 1 else None)


def threads_of(pid: int, role: str, name_filter: str | None = None, proc: Path = PROC) -> list[ThreadRef]:
    """The threads of process pid whose name (comm) matches the regular expression name_filter in full (all
    when None), as ThreadRefs of the given role; none when the process is gone."""
    try:
        tids = sorted(int(t.name) for t in (proc / str(pid) / "task").iterdir())
    except (FileNotFoundError, ProcessLookupError):
        return []
    out = []
    for tid in tids:
        ref = thread(pid, tid, role, proc)
        if ref is not None and (name_filter is None or re.fullmatch(name_filter, ref.name)):
            out.append(ref)
    return out


@dataclass(frozen=True)
class ThreadSample:
    """One thread's cumulative counters at a moment."""

    ref: ThreadRef
    run_ns: int
    delay_ns: int
    slices: int
    nonvoluntary: int


@dataclass(frozen=True)
class CoreSample:
    """One core's cumulative counters at a moment: steal, IRQ and softirq time (ns) and interrupts."""

    steal_ns: int
    irq_ns: int
    softirq_ns: int
    interrupts: int


@dataclass(frozen=True)
class Snapshot:
    """The counters of the given threads and cores at time t (time.monotonic)."""

    t: float
    threads: tuple[ThreadSample, ...]
    cores: Mapping[int, CoreSample] = field(default_factory=dict)


def sample_thread(ref: ThreadRef, proc: Path = PROC) -> ThreadSample | None:
    """A thread's counters now, None when it is gone."""
    task = proc / str(ref.pid) / "task" / str(ref.tid)
    sched, status = _read(task / "schedstat"), _read(task / "status")
    if sched is None or status is None:
        return None
    run, delay, slices = parse_schedstat(sched)
    nonvol = int(parse_status(status).get("nonvoluntary_ctxt_switches", "0"))
    return ThreadSample(ref, run, delay, slices, nonvol)


def core_samples(stat: str, interrupts: str, cores: Iterable[int]) -> dict[int, CoreSample]:
    """The given cores' counters from the texts of /proc/stat and /proc/interrupts (ticks become ns)."""
    ticks, irqs = parse_stat(stat), parse_interrupts(interrupts)
    ns = 1_000_000_000 // USER_HZ
    return {c: CoreSample(ticks[c].steal * ns, ticks[c].irq * ns, ticks[c].softirq * ns, irqs.get(c, 0))
            for c in cores if c in ticks}


def snapshot(threads: Iterable[ThreadRef], cores: Iterable[int] | None = None, proc: Path = PROC) -> Snapshot:
    """The counters of threads (those still running) and of cores (by default the threads' own cores) now."""
    refs = list(threads)
    t = time.monotonic()
    samples = tuple(s for s in (sample_thread(r, proc) for r in refs) if s is not None)
    want = sorted(set(cores) if cores is not None else {r.core for r in refs if r.core is not None})
    text = {n: _read(proc / n) or "" for n in ("stat", "interrupts")} if want else {"stat": "", "interrupts": ""}
    return Snapshot(t, samples, core_samples(text["stat"], text["interrupts"], want))


@dataclass(frozen=True)
class ThreadDelta:
    """What one thread went through between two snapshots."""

    role: str
    tid: int
    name: str
    core: int | None
    run_ms: float
    run_delay_ms: float   # time runnable but not running: the sum of its waits, so >= its longest wait
    slices: int           # timeslices: run_delay_ms / slices is its mean wait, a lower bound of the longest
    nonvoluntary: int     # involuntary context switches (preempted while runnable)


@dataclass(frozen=True)
class CoreDelta:
    """What the host took from one core between two snapshots."""

    core: int
    steal_ms: float
    irq_ms: float
    softirq_ms: float
    interrupts: int


HOST_SHARE = 0.02  # a poller that lost more than this share of a trial to the host lost its core


@dataclass(frozen=True)
class StallCause:
    """Why a core's pollers may have stalled: who polls there, their run delay and preemptions, the core's steal,
    and whether several of our pollers take turns on it by design (then their waits are the design's)."""

    who: str
    run_delay_ms: float
    steal_ms: float
    preemptions: int = 0
    shared: bool = False
    window_ms: float = 0.0  # the trial's length: what share of it the host took

    def taken_pct(self) -> float:
        """The share of the trial the host took from the core's poller (its waits, or the core's steal), %."""
        taken = max(0.0 if self.shared else self.run_delay_ms, self.steal_ms)
        return 100 * taken / self.window_ms if self.window_ms else 0.0

    def overflows(self, ring_ms: float) -> bool:
        """Whether a stall surely outlasted the ring: the poller's mean wait is longer than the ring holds, or the
        host took more than HOST_SHARE of the trial from it in waits or steal adding up to more than the ring
        (a dedicated poller that loses that much of its core is not polling for ms at a time; steal is read in
        10 ms ticks, so one tick alone is not a stall)."""
        if self.wait_ms > ring_ms:
            return True
        taken = max(0.0 if self.shared else self.run_delay_ms, self.steal_ms)
        return taken > ring_ms and self.taken_pct() > 100 * HOST_SHARE

    @property
    def wait_ms(self) -> float:
        """A busy poller waits only when preempted, so its run delay over its involuntary switches is its mean
        wait: a lower bound of its longest. Not counted where our own pollers share the core by design."""
        if self.shared or not self.run_delay_ms:
            return 0.0
        return self.run_delay_ms / max(1, self.preemptions)

    @property
    def stall_ms(self) -> float:
        """The stall the core is known to have had: the mean wait of its poller, or the host's steal (rare, long
        preemptions of the vCPU by the hypervisor; a sum over the trial, the only reading there is)."""
        return max(self.wait_ms, self.steal_ms)


@dataclass(frozen=True)
class Interference:
    """Host interference over a trial: per poller thread its waits, per core what the host took."""

    window_s: float
    threads: tuple[ThreadDelta, ...]
    cores: tuple[CoreDelta, ...]

    def to_json(self) -> dict[str, Any]:
        """The record kept with the trial (ms rounded to µs)."""
        return {"window_s": round(self.window_s, 6),
                "threads": [{"role": d.role, "tid": d.tid, "name": d.name, "core": d.core,
                             "run_ms": round(d.run_ms, 3), "run_delay_ms": round(d.run_delay_ms, 3),
                             "slices": d.slices, "nonvoluntary": d.nonvoluntary} for d in self.threads],
                "cores": [{"core": c.core, "steal_ms": round(c.steal_ms, 3), "irq_ms": round(c.irq_ms, 3),
                           "softirq_ms": round(c.softirq_ms, 3), "interrupts": c.interrupts} for c in self.cores]}

    def causes(self) -> dict[int, StallCause]:
        """Per core with a pinned thread or a reading: its pollers' roles, the run delay and preemptions of the one
        that waited longest per preemption, its steal, and whether several of our pollers share it."""
        roles: dict[int, list[str]] = {}
        worst: dict[int, ThreadDelta] = {}
        count: dict[int, int] = {}
        for d in self.threads:
            if d.core is None:
                continue
            label = ROLE_LABEL.get(d.role, d.role)
            if label not in roles.setdefault(d.core, []):
                roles[d.core].append(label)
            count[d.core] = count.get(d.core, 0) + 1
            w = worst.get(d.core)
            if w is None or d.run_delay_ms / max(1, d.nonvoluntary) > w.run_delay_ms / max(1, w.nonvoluntary):
                worst[d.core] = d
        steal = {c.core: c.steal_ms for c in self.cores}
        out = {}
        for c in sorted(set(roles) | set(steal)):
            w = worst.get(c)
            out[c] = StallCause("/".join(roles.get(c, [])), w.run_delay_ms if w else 0.0, steal.get(c, 0.0),
                                w.nonvoluntary if w else 0, count.get(c, 0) > 1, 1e3 * self.window_s)
        return out

    def stall_ms_by_core(self) -> dict[int, float]:
        """Per core the stall its pollers are known to have had (StallCause.stall_ms), ms."""
        return {c: k.stall_ms for c, k in self.causes().items()}

    def disturbance(self, ring_ms_by_core: Mapping[int, float]) -> str | None:
        """disturbance() over this trial's stalls, naming who polls on the core and the parts of the bound."""
        return disturbance(self.stall_ms_by_core(), ring_ms_by_core, self.causes())


def delta(before: Snapshot, after: Snapshot) -> Interference:
    """The interference between two snapshots (threads in both, cores in both; counters that went back, as a
    restarted thread's would, count as 0)."""
    was = {s.ref.tid: s for s in before.threads}
    threads = []
    for s in after.threads:
        b = was.get(s.ref.tid)
        if b is None or b.ref.pid != s.ref.pid:
            continue
        threads.append(ThreadDelta(s.ref.role, s.ref.tid, s.ref.name, s.ref.core,
                                   max(0, s.run_ns - b.run_ns) / 1e6, max(0, s.delay_ns - b.delay_ns) / 1e6,
                                   max(0, s.slices - b.slices), max(0, s.nonvoluntary - b.nonvoluntary)))
    cores = [CoreDelta(c, max(0, a.steal_ns - before.cores[c].steal_ns) / 1e6,
                       max(0, a.irq_ns - before.cores[c].irq_ns) / 1e6,
                       max(0, a.softirq_ns - before.cores[c].softirq_ns) / 1e6,
                       max(0, a.interrupts - before.cores[c].interrupts))
             for c, a in sorted(after.cores.items()) if c in before.cores]
    return Interference(max(0.0, after.t - before.t), tuple(threads), tuple(cores))


def ring_ms(ring_size: int, rate_pps_per_queue: float) -> float:
    """How long an RX ring of ring_size slots holds frames arriving at rate_pps_per_queue (ms; inf at rate 0)."""
    if ring_size < 0:
        raise ValueError(f"ring size {ring_size} is negative")
    return ring_size / rate_pps_per_queue * 1e3 if rate_pps_per_queue > 0 else float("inf")


def _ms(v: float) -> str:
    """Milliseconds in a sentence: one decimal, two significant digits below 0.1, 0 as 0."""
    return "0" if v == 0 else f"{v:.2g}" if v < 0.1 else f"{v:.1f}"


def disturbance(stall_ms_by_core: Mapping[int, float], ring_ms_by_core: Mapping[int, float],
                causes: Mapping[int, StallCause] | None = None) -> str | None:
    """A sentence naming the worst core (most over its ring) whose stall outlasted the time its RX ring covers, or
    None when none did (cores without a known ring are not judged). With causes, a core's stall is judged by
    StallCause.overflows (its mean wait, or the share of the trial the host took); without, by the stall given."""
    over = []
    for c, stall in stall_ms_by_core.items():
        ring = ring_ms_by_core.get(c)
        cause = (causes or {}).get(c)
        if ring is None or not (cause.overflows(ring) if cause else stall > ring):
            continue
        over.append((max(stall, cause.taken_pct() * cause.window_ms / 100 if cause else 0.0) / ring, c))
    if not over:
        return None
    _, core = max(over)
    stall, ring = stall_ms_by_core[core], ring_ms_by_core[core]
    cause = (causes or {}).get(core)
    who = f"{cause.who} core" if cause and cause.who else "core"
    if cause is None:
        return f"{who} {core} stalled {_ms(stall)} ms, its RX ring covers {_ms(ring)} ms at this rate"
    waits = (f"run delay {_ms(cause.run_delay_ms)} ms over {cause.preemptions} preemption(s)" if not cause.shared
             else "pollers sharing it by design not counted")
    parts = f" ({waits}, steal {_ms(cause.steal_ms)} ms)"
    if cause.wait_ms > ring:
        return f"{who} {core} stalled {_ms(stall)} ms{parts}, its RX ring covers {_ms(ring)} ms at this rate"
    return (f"{who} {core} lost {cause.taken_pct():.0f} % of the trial to other tasks{parts}, its RX ring covers "
            f"{_ms(ring)} ms at this rate")
