"""A running bench's pollers held still for a moment, so that the core probe (drivers/probe/coreprobe.py) can read the
cores they poll on between frame sizes and between trials without stopping the bench.

zlgen sleeps briefly between trials but testpmd, a VNF's testpmd and OVS's PMD threads busy-poll always: a probe
beside them measures them, not the cores. Two ways to get the cores back: restart the bench (about 5 s for P2P,
a VM's boot for PVP, and fresh rings and caches each time) or stop its processes for the probe's 0.7 s. Stopping
is cheap and, between trials, harmless: no traffic is offered, a stopped process keeps its rings, sockets,
vhost-user and memif connections as they are, and OVS's datapath flows outlive a second's idleness (max-idle
10 s). So the bench's own stop is used: SIGSTOP of each process (every thread, ovs-vswitchd's PMDs among them;
ovsdb-server polls nothing and runs on), a VM's vCPUs by QMP stop, each marked held so that no health check calls
it a stopped component, and let run again in reverse order however the probe ends. A process that is stopped
stays stopped only while the run holds it: the health checks run between trials, in this thread, never during
the hold, and SoftBench/OvsBench.stop let every stopped process run before stopping it (Ctrl-C included)."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager

from zeroloss.drivers.bench.ovsbench import OvsBench
from zeroloss.drivers.bench.softbench import SoftBench
from zeroloss.drivers.proc import ManagedProcess, freeze

from .base import Target
from .bench import BenchTarget


def hold(proc: ManagedProcess) -> Callable[[], None]:
    """Stops a running process (every thread) marked held; the function that lets it run again."""
    if not proc.alive() or proc.pid is None:
        return lambda: None
    pid = proc.pid
    proc.held = True
    freeze(pid)

    def release() -> None:
        if proc.alive():
            os.kill(pid, signal.SIGCONT)
        proc.held = False
    return release


@contextmanager
def pollers_held(target: Target) -> Iterator[bool]:
    """The target's polling processes stopped for the block, zlgen first, let run again in reverse order; yields
    whether it held any (False: a target whose pollers are not the run's to stop, e.g. an external DUT)."""
    bench = target.bench if isinstance(target, BenchTarget) else None
    with ExitStack() as stack:
        if isinstance(bench, SoftBench):
            if bench.gen is not None:
                stack.callback(hold(bench.gen.proc))
            if bench.dut is not None:
                bench.dut.pause()
                stack.callback(bench.dut.resume)
        elif isinstance(bench, OvsBench):
            if bench.gen is not None:
                stack.callback(hold(bench.gen.proc))
            for vnf in bench.vnfs:
                vnf.pause()
                stack.callback(vnf.resume)
            if bench.ovs is not None and bench.ovs.vswitchd is not None:
                stack.callback(hold(bench.ovs.vswitchd))
        else:
            yield False
            return
        yield True
