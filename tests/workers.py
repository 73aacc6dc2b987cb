"""`make check` runs the fast tier on every CPU (pytest-xdist, `-n logical`); this plugin (loaded by tests/conftest.py)
keeps the tests that measure how this host shares its CPUs honest there: a test marked `alone` runs while no other
worker runs a test. Without xdist (`make test`, a plain pytest) it does nothing.

The workers share two lock files (fcntl.flock) in a folder the controller makes for the session: every test holds
`tests` shared while it runs (setup, call, teardown), an `alone` test holds it exclusive. A worker takes `turn`
before it asks for `tests` and lets it go once it has it, so a waiting `alone` test (which keeps `turn` while it
waits) is not passed over by the other workers' next tests: they wait behind it, as a writer-first lock.

What else the workers share is safe by construction: each has its own tmp_path base (xdist), its own guard log and
guarded environment (tests/tiers.py, in pytest_configure), its own PostgreSQL server for the history's tests
(tests/history/conftest.py: the session fixture is per worker; pgtemp starts each in a new temporary folder on a
free port and reaps only servers whose owner process is gone).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

MARKER = "alone: measures how this host shares its CPUs (core probe, run delay): under xdist it runs while no other "\
         "test runs"
KEY = "zl_worker_locks"  # the folder of the lock files, given to each worker in its workerinput
_folder: Path | None = None  # the controller's, removed at the end


def pytest_configure(config):
    config.addinivalue_line("markers", MARKER)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """On the controller, before a worker starts: the session's lock folder (made once)."""
    global _folder
    if _folder is None:
        _folder = Path(tempfile.mkdtemp(prefix="zl-workers-"))
    node.workerinput[KEY] = str(_folder)


def pytest_unconfigure(config):
    if _folder is not None and not hasattr(config, "workerinput"):
        shutil.rmtree(_folder, ignore_errors=True)


@contextmanager
def _locked(path: Path, mode: int) -> Iterator[None]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, mode)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases its lock


@contextmanager
def turn(folder: Path, alone: bool) -> Iterator[None]:
    """Hold `tests` (exclusive when alone) for the block, having queued for it through `turn`."""
    fd = os.open(folder / "tests", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        with _locked(folder / "turn", fcntl.LOCK_EX):
            fcntl.flock(fd, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)  # and with it the lock


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """In an xdist worker, the test's setup, call and teardown under the session's lock (see the module's doc)."""
    folder = getattr(item.config, "workerinput", {}).get(KEY)
    if folder is None:  # not a worker of make check's xdist run (a plain run, or a pytest a test starts)
        return (yield)
    with turn(Path(folder), item.get_closest_marker("alone") is not None):
        return (yield)
