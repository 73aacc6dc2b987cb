"""What every event on a lab node is made of (drivers/lab/labevents.py, labrestart.py): its changes go through the
node's own commands over its session, each recorded with its undo in LabDut.changes, so that a trial cut short still
leaves the node as it was."""

from __future__ import annotations

from zeroloss.core.errors import ZeroLossError

from ..bench.events import Event
from .labdut import LabDut


class LabEvent(Event):
    def __init__(self, dut: LabDut):
        self.dut = dut
        self.mine: list[tuple[list[str], list[str]]] = []  # this event's entries of dut.changes

    def _change(self, setting: str) -> None:
        n = len(self.dut.changes)
        self.dut.change(setting)
        self.mine = self.dut.changes[n:]

    def _run(self, argv: list[str], what: str) -> None:
        r = self.dut.agent().run(argv, env=self.dut.env, timeout=60)
        if r.rc:
            raise ZeroLossError(f"{self.dut.lab.dut.target}: {what} failed: {r.why()}")

    def _undo_mine(self) -> None:
        """This event's changes undone, newest first, and taken off the node's list of changes to undo."""
        for undo, what in reversed(self.mine):
            self._run(undo, "undo of " + ":".join(what[:3]))
            if (undo, what) in self.dut.changes:
                self.dut.changes.remove((undo, what))
        self.mine = []

    def restore(self) -> None:
        if self.mine:
            self._undo_mine()


# the node's OVS port counters, read around each action that may set them back to zero: OVS 3.x sums a vhost
# port's per-virtqueue counters (new with a reconnected VNF) and zeroes its drop counters when the port is
# reconfigured or set up, as on the bench (bench.events, outagerun.restarted)
PORTS = (("ovs", "ports"),)
