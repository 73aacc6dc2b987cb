"""Fixture trees of hosts (tests/fixtures/host/NAME, built by make_fixtures.py) and helpers to read them."""

from pathlib import Path

import pytest

from zeroloss.host.inventory import collect
from zeroloss.host.ovsstate import read_captured
from zeroloss.host.sysfs import Root

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "host"


def load(name: str, ovs: bool = True):
    """The inventory of a fixture host, with its captured OVS state when it has one."""
    root = Root(FIXTURES / name)
    state = read_captured(FIXTURES / name / "ovs") if ovs and (FIXTURES / name / "ovs").is_dir() else None
    return collect(root, state)


@pytest.fixture(scope="session")
def r740xd():
    return load("r740xd")


@pytest.fixture(scope="session")
def single():
    return load("single-socket")


@pytest.fixture(scope="session")
def vm2():
    return load("vm-2core")


@pytest.fixture(scope="session")
def minus1():
    return load("numa-minus-one")


def make_fixtures():
    """The fixture builder script, imported from its path (tests/ is not a package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_fixtures", FIXTURES / "make_fixtures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
