"""Fixtures of lab mode's tests: a real OpenSSH server on 127.0.0.1 (sshd) and a deployed OVS-DPDK node (lab)."""

from __future__ import annotations

import os
import shutil

import pytest

from .lab import Lab, missing
from .sshd import SSH_KEYGEN, SSHD, SshServer


@pytest.fixture(scope="session")
def sshd(tmp_path_factory):
    """OpenSSH's sshd on 127.0.0.1; reach it with `ssh -F sshd.ssh_config lab1` (or lab2, labhost)."""
    for tool in (SSHD, SSH_KEYGEN, "ssh"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is missing (Debian packages openssh-server, openssh-client)")
    with SshServer(tmp_path_factory.mktemp("sshd")) as server:
        yield server


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """The lab node deployed by lab.sh: OVS-DPDK (br-phy, br-int) and a testpmd VNF, stopped after the module.
    Its directory's name carries our pid: DPDK file prefixes derive from it and must not clash."""
    why = missing()
    if why:
        pytest.skip(f"no lab here: {why}")
    with Lab(tmp_path_factory.mktemp("lab") / f"l{os.getpid()}") as node:
        yield node
