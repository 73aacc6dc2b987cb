"""What a bench test accepts of a finished `zeroloss run`: exit 0 (measured), or exit 3 (INCONCLUSIVE) when the
host's noise kept a size from a conclusive answer; never an error, and never a FAIL without a requirement."""

from __future__ import annotations

import subprocess


def assert_ran(r: subprocess.CompletedProcess) -> None:
    """The run finished: exit 0, or exit 3 with its INCONCLUSIVE verdict said (stderr, or --json's stdout)."""
    assert r.returncode in (0, 3), r.stdout[-2000:] + r.stderr
    if r.returncode == 3:
        assert "INCONCLUSIVE" in r.stderr + r.stdout, r.stderr
