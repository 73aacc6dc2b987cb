"""Host tuning for OVS-DPDK: read the host (inventory), derive settings (plan), check them (audit), and
simulate OVS's RX queue to PMD assignment (rxq). Pure logic here never starts a process."""
