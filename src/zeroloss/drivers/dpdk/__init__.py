"""DPDK processes and facilities: EAL arguments, hugepages, telemetry, testpmd."""
