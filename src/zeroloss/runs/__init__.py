"""The loops over a target: run (the per-frame searches), trial (the search's trial callback), soak, events, b2b,
campaign and tune."""
