# zeroloss: `make setup` once as root, then `make check` (fast tier), `make test` (everything: CI), `make bench`, `make demo`.
.PHONY: setup build check test test-c test-py bench bench-save lint docs demo clean

VENV := .venv/bin

setup:
	./scripts/setup.sh

build:
	@test -f gen/build/build.ninja || meson setup gen/build gen --buildtype=release
	ninja -C gen/build

# the fast tier (< 3 min, no root, no hugepages): zlgen's C unit tests and every Python test without the bench or lab
# marker, i.e. that starts no DPDK, OVS, QEMU, podman or sshd (tests/tiers.py fails a test that does unmarked); the
# Python tests on every CPU (pytest-xdist, the test extra; PYTEST_XDIST_AUTO_NUM_WORKERS=N sets the number), a test
# marked alone while no other runs (tests/workers.py).
check: build
	meson test -C gen/build --print-errorlogs
	@$(VENV)/python -c 'import xdist' 2>/dev/null || { echo 'make check: no pytest-xdist in .venv: run make setup (it installs the test extra)' >&2; exit 1; }
	$(VENV)/pytest -q -n logical -m "not bench and not lab" tests

# every test: C unit tests of zlgen, then the Python tests that start no process on every CPU (as make check), then
# the lab and bench integration tests in one process (they take the bench in turn); both tiers run, either failing
# fails the target
test: setup
	meson test -C gen/build --print-errorlogs
	@unit=0; $(VENV)/pytest -q -n logical -m "not bench and not lab" tests || unit=$$?; \
	$(VENV)/pytest -q --durations=15 -m "bench or lab" tests || exit $$?; exit $$unit

test-c: build
	meson test -C gen/build --print-errorlogs

test-py:
	$(VENV)/pytest -q --durations=15 tests

bench: setup
	$(VENV)/zeroloss bench

# what saving a trial costs: the whole result file against one journal line, side by side
bench-save: setup
	$(VENV)/python -m zeroloss.studies.savebench

# ruff, the import layers and loops (pyproject [tool.importlinter]), mypy --strict on the pure packages ([tool.mypy])
lint:
	$(VENV)/ruff check src tests
	$(VENV)/lint-imports
	$(VENV)/mypy

# the docs site (mkdocs.yml, docs/) into site/; --strict: a broken link or anchor, or a page left out of the nav, fails
docs:
	@test -x $(VENV)/mkdocs || { echo 'make docs: no $(VENV)/mkdocs: run make setup (it installs the docs extra)' >&2; exit 1; }
	NO_MKDOCS_2_WARNING=1 $(VENV)/mkdocs build --strict --site-dir site

demo: setup
	$(VENV)/zeroloss trial --rate 1M --flows 1024 --duration 5

clean:
	rm -rf gen/build
