#!/usr/bin/python3
"""A stand-in for `kubectl` (and `oc`) in lab tests, where no cluster exists: the "pod" is this host, as the lab tests'
sshd stands in for a guest. Linked as kubectl / oc into a directory put first on PATH.

It accepts only the command line zeroloss's KubeExecTarget builds:
    kubectl [--kubeconfig FILE] [--context CTX] exec -i -n NS POD [-c CONTAINER] -- CMD [ARG...]
and refuses anything else (exit 2). It then runs CMD on this host with its stdin, stdout and stderr, and ends as
kubectl does (client-go remotecommand v4 + kubectl's checkErr): a command that exits N != 0, or is killed by signal S
(N = 128 + S, as a pod's deletion kills it), gives "command terminated with exit code N" on stderr and exit N.

Environment (the test's controls):
    ZL_KUBECTL_FAIL=FILE   print FILE (kubectl's text, tests/fixtures/kube) on stderr and exit 1, as kubectl does
    ZL_KUBECTL_LOG=FILE    append each accepted command line (JSON) to FILE
    ZL_KUBECTL_PIDS=FILE   append the pid of each CMD started to FILE (the "pod's" process, to kill it)
"""

import json
import os
import signal
import subprocess
import sys


def parse(argv):
    """(options, namespace, pod, container, cmd) from the accepted shape; None for anything else."""
    opts = {}
    i = 0
    while i < len(argv) and argv[i] in ("--kubeconfig", "--context"):
        if i + 1 >= len(argv) or argv[i] in opts:
            return None
        opts[argv[i]] = argv[i + 1]
        i += 2
    rest = argv[i:]
    if rest[:3] != ["exec", "-i", "-n"] or len(rest) < 7:
        return None
    ns, pod, rest = rest[3], rest[4], rest[5:]
    container = None
    if rest[:1] == ["-c"]:
        if len(rest) < 2:
            return None
        container, rest = rest[1], rest[2:]
    if rest[:1] != ["--"] or len(rest) < 2 or any(x.startswith("-") for x in (ns, pod, container or "x")):
        return None
    return opts, ns, pod, container, rest[1:]


def main():
    got = parse(sys.argv[1:])
    if got is None:
        sys.stderr.write(f"fake kubectl: unexpected command line {sys.argv[1:]}\n")
        return 2
    opts, ns, pod, container, cmd = got
    if os.environ.get("ZL_KUBECTL_LOG"):
        with open(os.environ["ZL_KUBECTL_LOG"], "a") as f:
            f.write(json.dumps({"tool": os.path.basename(sys.argv[0]), "options": opts, "namespace": ns, "pod": pod,
                                "container": container, "cmd": cmd}) + "\n")
    if os.environ.get("ZL_KUBECTL_FAIL"):
        with open(os.environ["ZL_KUBECTL_FAIL"]) as f:
            sys.stderr.write(f.read())
        return 1
    p = subprocess.Popen(cmd)
    if os.environ.get("ZL_KUBECTL_PIDS"):
        with open(os.environ["ZL_KUBECTL_PIDS"], "a") as f:
            f.write(f"{p.pid}\n")
    signal.signal(signal.SIGTERM, lambda *_: p.terminate())
    rc = p.wait()
    code = 128 - rc if rc < 0 else rc
    if code:
        sys.stderr.write(f"command terminated with exit code {code}\n")
    return code


if __name__ == "__main__":
    sys.exit(main())
