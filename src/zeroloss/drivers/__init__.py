"""Processes and devices zeroloss starts, reads and stops: zlgen (gen), DPDK (dpdk), Open vSwitch (dut), the VNFs
(vnf), the software bench (bench), a lab node over SSH (lab), what the host did around each trial (probe),
and the processes' ownership (proc, session)."""
