"""The software bench: zlgen and DUT processes joined by DPDK virtual devices on one host."""
