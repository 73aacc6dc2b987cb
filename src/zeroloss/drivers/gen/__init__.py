"""zlgen, the DPDK traffic generator: process, control client, frame format."""

from .client import ZlgenClient, ZlgenError
from .process import Zlgen, ZlgenConfig, zlgen_binary

__all__ = ["Zlgen", "ZlgenClient", "ZlgenConfig", "ZlgenError", "zlgen_binary"]
