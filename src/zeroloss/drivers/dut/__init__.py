"""Devices under test that zeroloss starts and configures: Open vSwitch with DPDK."""
