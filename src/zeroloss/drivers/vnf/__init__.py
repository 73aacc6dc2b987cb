"""The VNF as a virtual machine: the guest domain (pure) and its lifecycle."""
