"""The bench's virtual wires: the device arguments each end gets."""

from pathlib import Path

import pytest

from zeroloss.core.errors import ZeroLossError
from zeroloss.drivers.bench.links import make_wire, memif_wire


def test_memif_sockets_are_files_in_the_session_folder_never_abstract():
    """DPDK's memif (20.11+) binds an abstract socket unless told socket-abstract=no: any local user could connect."""
    sock = Path("/run/zeroloss/s1/wire0.sock")
    w = memif_wire(0, sock, ring_log2=12, b_index=1)
    for end in (w.a, w.b):
        args = dict(kv.split("=", 1) for kv in end.split(",")[1:])
        assert args["socket"] == str(sock) and args["socket-abstract"] == "no"
    assert w.a.startswith("net_memif0,role=server,") and w.b.startswith("net_memif1,role=client,")
    assert "socket-abstract=no" in make_wire("memif", 2, sock, jumbo=True, depth=14).a


def test_memif_ring_size_is_bounded():
    with pytest.raises(ZeroLossError, match="outside 2"):
        memif_wire(0, Path("/x.sock"), ring_log2=15)
