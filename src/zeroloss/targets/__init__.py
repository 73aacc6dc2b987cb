"""The DUT kinds a run measures through: one interface (base.Target) and one entry per kind."""
