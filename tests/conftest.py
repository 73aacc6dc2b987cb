"""Session-wide test setup: the test tiers (markers bench and lab, and the process guard) of tests/tiers.py, make
check's xdist workers (the alone marker) of tests/workers.py, and pytester for the tests that show both at work
(tests/test_tiers.py, tests/test_workers.py)."""

pytest_plugins = ["tiers", "workers", "pytester"]
