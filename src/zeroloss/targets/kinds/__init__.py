"""The kinds of DUT, one module (or package) each, registered when imported (targets/registry.py): adding one is
one module here and its test; nothing else learns its name."""
