"""The run's watch of its cores (runs/run.py): whether the cores the bench's processes poll on run independently,
probed before each frame size and again after a run of disturbed or generator-failed trials, each reading kept in
the result file with the sizes measured after it (drivers/probe/coreprobe.py)."""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext

from zeroloss.core import frames as frames_
from zeroloss.core.config import RunConfig
from zeroloss.core.errors import ZeroLossError
from zeroloss.drivers.probe import coreprobe
from zeroloss.results.records import CoreProbe, TrialEntry
from zeroloss.results.resultfile import ResultFile
from zeroloss.targets.base import Target
from zeroloss.targets.pollers import pollers_held

# the core probe (_probe_cores): how often a shared reading is probed again while waiting for independent cores, and
# how many disturbed or generator-failed trials in a row probe again mid-search
PROBE_EVERY_S = 2.0
DISTURBED_RUN = 3


class CoreWatch:
    """Run's core probe, as a part of it: the settings, the result file and the progress callback are the run's."""

    cfg: RunConfig
    rf: ResultFile
    progress: Callable[[str, dict], None]
    _disturbed_run: int  # disturbed or generator-failed trials in a row
    _cores_waited_out: bool  # this frame size's wait for independent cores ran out

    def _probe_cores(self, frames: list[int], cores: set[int],
                     hold: Callable[[], AbstractContextManager[object]] = nullcontext, trigger: str = "frame",
                     after_trial: int | None = None, wait: bool = True) -> None:
        """Whether the cores the bench's processes poll on run independently now (drivers/probe/coreprobe.py), probed
        with its pollers held still (targets/pollers.py: cheaper than a bench restart, why there) before each frame size
        and after a run of disturbed or generator-failed trials (_cores_after_trial): a hypervisor may run both
        vCPUs of a small VM on one physical CPU for minutes and give them back later. While a reading says
        shared, the probe runs again every PROBE_EVERY_S up to core_probe_wait_s (nothing is measured meanwhile);
        then the sizes are measured anyway, kept with the last reading (a record per reading, with the sizes
        measured after it: the verdict flags those cores-shared) and the run says so in one warning. A probe that
        cannot run is a warning too: it never stops the run."""
        if trigger == "frame":
            self._disturbed_run, self._cores_waited_out = 0, False
        if not self.cfg.core_probe or len(cores) < 2:
            return
        wait_s = self.cfg.core_probe_wait_s if wait else 0.0
        started, attempts = time.monotonic(), 0
        while True:
            with hold():
                try:
                    reading = coreprobe.probe(sorted(cores))
                except ZeroLossError as e:
                    self.rf.warn(f"core probe: {e}")
                    return
            attempts += 1
            waited = time.monotonic() - started
            if not CoreProbe.from_json(reading).shared or waited + PROBE_EVERY_S > wait_s:
                break
            if attempts == 1:
                self.progress("cores", {"cores": sorted(cores), "line": f"{coreprobe.describe(reading)}; probing "
                                        f"again every {PROBE_EVERY_S:g} s for up to {wait_s:g} s"})
            time.sleep(PROBE_EVERY_S)
        why = f"after {DISTURBED_RUN} disturbed or generator-failed trials: " if trigger == "disturbed" else ""
        self.progress("cores", {"cores": sorted(cores), "line": why + coreprobe.describe(reading)})
        more = {"trigger": trigger, "attempts": attempts, "waited_s": round(waited, 1),
                **({"after_trial": after_trial} if after_trial is not None else {})}
        probe = CoreProbe.from_json({"frames": frames, **reading, **more})
        self.rf.add_core_probe(probe)
        if probe.shared:
            sizes = ", ".join(map(frames_.text, frames)) + (
                f" from trial {after_trial + 2} on" if after_trial is not None else "")
            never = (f"the host never gave independent cores in {waited:.0f} s ({attempts} probes); "
                     if attempts > 1 else "")
            self.rf.warn(f"{coreprobe.describe(reading)}: {never}{sizes} measured on them anyway, flagged "
                         "cores-shared (an NDR measured there is the sharing's, not the data path's); pin the "
                         "generator and the DUT to separate physical cores, or run again when the host gives them")
            self._cores_waited_out = self._cores_waited_out or attempts > 1

    def _cores_after_trial(self, target: Target, frame: int, entry: TrialEntry, replayed: bool) -> None:
        """After DISTURBED_RUN disturbed, generator-failed or far short trials in a row (a pass zlgen delivered more
        than gen_tolerance_pct below its aim: seen when the host took its core mid-search), the cores probed again
        between two trials, as before a frame size: a host that took a core away mid-search shows as such a run,
        and waiting for the core back beats retrying into it. No wait again once this size's wait ran out (a probe
        only)."""
        if replayed:
            return
        aim = entry.aim_pps if entry.aim_pps is not None else entry.rate_pps
        got = min((d.achieved_pps for d in entry.outcome.directions), default=aim)
        far = entry.verdict == "pass" and got < aim * (1 - self.cfg.gen_tolerance_pct / 100)  # zlgen fell far short
        if entry.verdict not in ("disturbed", "generator-failure") and not far:
            self._disturbed_run = 0
            return
        self._disturbed_run += 1
        if self._disturbed_run >= DISTURBED_RUN:
            self._disturbed_run = 0
            self._probe_cores([frame], target.cores(), lambda: pollers_held(target), "disturbed", entry.index,
                              wait=not self._cores_waited_out)
