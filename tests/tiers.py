"""Test tiers (issue 39): the `bench` and `lab` markers, given by directory, and the guard that fails a test which
starts a tier's process without its marker. Loaded by tests/conftest.py; `make check` runs `-m "not bench and not lab"`.

- bench: the test starts the software bench's programs (zlgen, dpdk-testpmd, OVS, QEMU, podman): hugepages, DPDK.
  Every test under tests/bench/ has it; elsewhere it is given per module or per test.
- lab: lab mode's tests (tests/lab/): a real sshd on 127.0.0.1, and with `bench` too the lab node's OVS-DPDK.

While a test without `bench` runs (its setup, call and teardown), ZEROLOSS_TEST_GUARD names it and every
subprocess.Popen of this process and of its Python children (procguard/sitecustomize.py, put first on PYTHONPATH)
is checked: starting a bench program (or sshd without `lab`) is refused, and the test fails with a line saying
which program it started and which marker it needs, even when the code under test caught the refusal.
"""

from __future__ import annotations

import importlib.util
import json
import os
import tempfile
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
GUARD_DIR = HERE / "procguard"
TIER_DIRS = (("bench", HERE / "bench"), ("lab", HERE / "lab"))
TIERS = ("bench", "lab")


def _load_guard():
    spec = importlib.util.spec_from_file_location("zl_procguard", GUARD_DIR / "sitecustomize.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


procguard = _load_guard()
_log: Path | None = None


def pytest_configure(config):
    """The markers are registered in pyproject.toml; here the guard's log and the guard of this process."""
    global _log
    fd, path = tempfile.mkstemp(prefix="zl-procguard-", suffix=".log")
    os.close(fd)
    _log = Path(path)
    procguard.install()


def pytest_unconfigure(config):
    if _log is not None:
        _log.unlink(missing_ok=True)


def pytest_collection_modifyitems(config, items):
    """A test under tests/bench/ is a bench test, one under tests/lab/ a lab test."""
    for item in items:
        for marker, folder in TIER_DIRS:
            if item.path.is_relative_to(folder):
                item.add_marker(marker)


def tier_marks(item) -> list[str]:
    return [m for m in TIERS if item.get_closest_marker(m) is not None]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    marks = tier_marks(item)
    saved = {k: os.environ.get(k) for k in (procguard.GUARD, "PYTHONPATH")}
    if "bench" in marks:  # free to start anything, also when this pytest runs inside a guarded test
        os.environ.pop(procguard.GUARD, None)
    else:
        os.environ[procguard.GUARD] = json.dumps({"test": item.nodeid, "marks": marks, "log": str(_log)})
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(GUARD_DIR), saved["PYTHONPATH"]) if p)
    try:
        return (yield)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """A phase in which a guarded test started a tier's process fails with the guard's message."""
    report = yield
    if _log is None or not _log.stat().st_size:
        return report
    lines = _log.read_text().splitlines()
    _log.write_text("")
    messages = list(dict.fromkeys(json.loads(ln)["message"] for ln in lines if ln.strip()))
    if messages:
        where = f"\n\n{report.longrepr}" if report.failed and report.longrepr else ""  # the refusal's traceback
        report.outcome = "failed"
        report.longrepr = "process guard (tests/tiers.py): " + "\n".join(messages) + where
    return report
