"""zeroloss: zero-packet-loss throughput of virtual-switch data paths."""

__version__ = "0.1.0"
