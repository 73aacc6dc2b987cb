"""The bench's memif sockets are files in the session's 0700 folder, never abstract names any local user reaches."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

pytestmark = pytest.mark.bench


def unix_paths() -> list[str]:
    """Every bound UNIX socket's path in /proc/net/unix ('@NAME' for the abstract namespace)."""
    lines = Path("/proc/net/unix").read_text().splitlines()[1:]
    return [fields[7] for fields in (ln.split(None, 7) for ln in lines) if len(fields) == 8]


def test_memif_sockets_are_files_in_the_private_session_folder(p2p_memif):
    root = p2p_memif.ws.root
    assert stat.S_IMODE(root.stat().st_mode) == 0o700
    for name in ("wire0", "wire1"):
        sock = p2p_memif.ws.sock(name)
        assert stat.S_ISSOCK(sock.stat().st_mode), sock
    ours = [p for p in unix_paths() if str(root) in p]
    assert {str(p2p_memif.ws.sock("wire0")), str(p2p_memif.ws.sock("wire1"))} <= set(ours)
    assert [p for p in ours if p.startswith("@")] == []  # no abstract memif socket of this session
