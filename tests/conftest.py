"""Session-wide test setup: the test tiers (markers bench and lab, and the process guard) of tests/tiers.py, and
pytester for the test that shows the guard at work (tests/test_tiers.py)."""

pytest_plugins = ["tiers", "pytester"]
