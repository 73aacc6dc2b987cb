"""`zeroloss bench --*` and `zeroloss check`: studies that drive runs and targets side by side (search strategies,
VNF kinds, a noisy neighbour, Neutron's OVS, tune, a lab) and check the generator and the ledger themselves."""
