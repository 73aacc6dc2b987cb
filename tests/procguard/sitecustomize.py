"""The test tiers' process guard (issue 39): a test without the `bench` marker must not start the bench's programs
(DPDK, OVS, the generator, QEMU, podman), and one without `bench` or `lab` must not start the lab's sshd.

tests/conftest.py imports this module and sets ZEROLOSS_TEST_GUARD while an unmarked test runs; the directory of this
file is then first on PYTHONPATH, so every Python child of that test (`python -m zeroloss.cli ...`) imports it as its
sitecustomize and is guarded too. A blocked start raises BlockedStart and appends one JSON line to the guard's log,
from which the conftest fails the test even if the code under test caught the exception.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess

GUARD = "ZEROLOSS_TEST_GUARD"  # JSON {"test": nodeid, "marks": [its tier markers], "log": path} while it runs

# programs by the marker a test needs to start them (basenames; qemu-system-* by prefix)
BENCH_PROGRAMS = frozenset({
    "zlgen", "dpdk-testpmd", "testpmd", "ovs-vswitchd", "ovs-vswitchd-dpdk", "ovsdb-server", "ovs-ctl",
    "podman", "conmon", "lab.sh",
})
LAB_PROGRAMS = frozenset({"sshd"})


class BlockedStart(RuntimeError):
    """A test without the marker its tier needs tried to start a bench or lab program."""


# programs that run the command after their own options (sudo env A=1 taskset -c 0 nice -n 5 zlgen ...)
WRAPPERS = frozenset({"sudo", "env", "nice", "ionice", "taskset", "timeout", "chrt", "numactl", "setsid", "stdbuf",
                      "nohup", "exec", "unshare", "nsenter", "prlimit", "sh", "bash", "dash"})
SHELLS = frozenset({"sh", "bash", "dash"})
OPERAND = re.compile(r"[0-9a-fA-Fx,.:\-]+")  # a wrapper's number, mask or core list (timeout 5, taskset -c 0,1)


def programs(argv: list[str]):
    """The names argv runs: its program, and through wrappers the command they run (`sh -c STRING`'s too)."""
    i = 0
    while i < len(argv):
        name = os.path.basename(argv[i])
        yield name
        if name not in WRAPPERS:
            return
        i += 1
        while i < len(argv) and (argv[i].startswith("-") or "=" in argv[i] or OPERAND.fullmatch(argv[i])):
            if argv[i] == "-c" and name in SHELLS and i + 1 < len(argv):
                yield from programs(split(argv[i + 1]))
                return
            i += 1


def needed_marker(argv: list[str]) -> tuple[str, str] | None:
    """(marker, program) when argv starts a program of a tier: as its program, through a wrapper (sudo, env, sh -c,
    bash lab.sh), or named by path anywhere in it (ssh host /usr/bin/dpdk-testpmd ...). A bare word that only
    names one (a container called testpmd) is not a start."""
    named = [os.path.basename(w) for w in argv if "/" in w and os.access(w, os.X_OK) and not os.path.isdir(w)]
    for name in [*programs(argv), *named]:
        if name in BENCH_PROGRAMS or name.startswith("qemu-system-"):
            return "bench", name
        if name in LAB_PROGRAMS:
            return "lab", name
    return None


def split(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


def words(args, executable) -> list[str]:
    if isinstance(args, (str, bytes, os.PathLike)):
        out = split(os.fsdecode(args))
    else:
        out = [os.fsdecode(a) for a in args]
    return ([os.fsdecode(executable)] if executable else []) + out


def check(args, executable=None) -> None:
    """Raises BlockedStart (and logs it) when the running test may not start args; no-op outside a guarded test."""
    raw = os.environ.get(GUARD)
    if not raw:
        return
    guard = json.loads(raw)
    argv = words(args, executable)
    need = needed_marker(argv)
    if need is None:
        return
    marker, program = need
    if "bench" in guard["marks"] or marker in guard["marks"]:
        return
    wanted = "bench" if marker == "bench" else "lab (or bench)"
    msg = (f"{guard['test']} started {program} ({shlex.join(argv)[:200]}) without the {wanted} marker: "
           f"mark it @pytest.mark.{marker} (or pytestmark = pytest.mark.{marker} for its module); "
           "`make check` runs only the tests that carry neither bench nor lab and must start no such process")
    with open(guard["log"], "a") as f:
        f.write(json.dumps({"test": guard["test"], "pid": os.getpid(), "message": msg}) + "\n")
    raise BlockedStart(msg)


def install() -> None:
    """Wraps subprocess.Popen (run, call, check_output and asyncio go through it) with check; once per process."""
    if getattr(subprocess.Popen.__init__, "_zl_guard", False):
        return
    original = subprocess.Popen.__init__

    def guarded_init(self, args, *a, **kw):
        check(args, kw.get("executable", a[1] if len(a) > 1 else None))  # Popen(args, bufsize, executable, ...)
        original(self, args, *a, **kw)

    guarded_init._zl_guard = True  # type: ignore[attr-defined]
    subprocess.Popen.__init__ = guarded_init  # type: ignore[method-assign]


def chain() -> None:
    """Runs the sitecustomize this one shadows (Debian's python3 has one), as if it had been found first."""
    import importlib.machinery
    import importlib.util
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    path = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is not None and spec.loader is not None and spec.origin != os.path.abspath(__file__):
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
        except Exception:  # as site.py does with a failing sitecustomize: the program still runs
            pass


if __name__ == "sitecustomize":
    chain()
if os.environ.get(GUARD):
    install()
