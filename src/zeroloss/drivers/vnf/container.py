"""The VNF as a container (a CNF): dpdk-testpmd in the image scripts/build-cnf-image.sh builds from the host's own
DPDK package (no registry), run by podman with runc, pinned to a cpuset, the host's hugepages mounted, its
virtio-user ports serving vhost-user sockets in the bench's socket folder mounted at /vhu as Userspace CNI's
examples mount theirs. Its EAL runtime folder is mounted at the same path on both sides, so the host reads the
container's DPDK telemetry (its ethdev counters, for the loss ledger) as it reads a process VNF's.

Two ways to start it, one container: `podman run` (launch "run"), or `podman kube play` of the Pod manifest that
cnf.k8s renders (launch "kube"), the Pod `zeroloss host plan --format k8s` prints, so that the manifest is shown
to run. testpmd's prompt is the client's standard input either way (`podman run -i`, or `podman attach` of the
Pod's container, which has stdin: true).

Lifecycle: the podman client is our child and gets SIGTERM, not SIGKILL, when zeroloss dies (even by kill -9):
podman proxies it to testpmd, which quits, and conmon removes the container (--rm). Stop asks testpmd to quit,
then removes the container (or the Pod) by name whatever state it is in; the name is recorded in the session
folder so that a later zeroloss removes what a killed one left (session.reap). podman on Debian 12 needs runc
(crun refuses the hybrid cgroup layout) and explicit ulimits (its defaults fail setrlimit): a containers.conf in
the session folder, given through CONTAINERS_CONF, says both for run and kube play alike.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Self

from zeroloss.core.errors import ZeroLossError
from zeroloss.core.fileio import write_text_atomic

from ..dpdk.telemetry import Telemetry
from ..dpdk.vnf import Placement, Vnf
from ..proc import STOPPED, ComponentDied, ManagedProcess, freeze, proc_state, signal_name
from ..session import forget_container, record_child, record_container, remove_container

IMAGE_REPO = "localhost/zeroloss-testpmd"
BUILD_SCRIPT = Path(__file__).resolve().parents[4] / "scripts" / "build-cnf-image.sh"
SHARED_DIR = "/vhu"        # where the vhost-user sockets are in the container (Userspace CNI's examples)
HUGEPAGES = "/dev/hugepages"
ULIMITS = ("nofile=1024:1024", "nproc=1024:1024")
LAUNCHES = ("run", "kube")
PODMAN_S = 30.0            # a podman command that takes longer is stuck


class PodmanFailed(ZeroLossError):
    """podman refused or failed a command: the container never ran (not a vhost-user connection problem)."""


def containers_conf(runtime: str = "runc") -> str:
    """containers.conf(5) for every podman command of the bench: the OCI runtime and default ulimits."""
    ulimits = ", ".join(f'"{u}"' for u in ULIMITS)
    return f'[containers]\ndefault_ulimits = [{ulimits}]\n\n[engine]\nruntime = "{runtime}"\n'


def podman_binary() -> str:
    path = shutil.which("podman")
    if path is None:
        raise ZeroLossError("podman is not installed", "run 'make setup' (Debian packages podman, runc), or use "
                                                       "--vnf process")
    return path


def dpdk_version() -> str:
    """The host's DPDK package version: the image's tag."""
    try:
        out = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "dpdk"], capture_output=True, text=True,
                             timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return out.stdout.strip() or "unknown"


def image_name(version: str | None = None) -> str:
    """The CNF image: ZEROLOSS_CNF_IMAGE if set (an image of your own with dpdk-testpmd at /usr/bin), else the one
    build-cnf-image.sh built for the host's DPDK."""
    if version is None and os.environ.get("ZEROLOSS_CNF_IMAGE"):
        return os.environ["ZEROLOSS_CNF_IMAGE"]
    tag = "".join(c if c.isalnum() or c in "_.-" else "_" for c in (version or dpdk_version()))
    return f"{IMAGE_REPO}:{tag}"


def podman(args: list[str], env: dict[str, str], timeout: float = PODMAN_S, check: bool = True) -> str:
    """One podman command; its standard output. A failure is one line (podman's last line of stderr)."""
    argv = [podman_binary(), *args]
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        raise PodmanFailed(f"podman {args[0]} did not finish in {timeout:.0f} s", "is podman's storage locked by "
                                                                                  "another podman?") from None
    if check and out.returncode != 0:
        lines = [ln.strip() for ln in out.stderr.splitlines() if ln.strip()]
        raise PodmanFailed(f"podman {' '.join(args[:2])} failed: {lines[-1] if lines else f'exit {out.returncode}'}")
    return out.stdout


def require_image() -> str:
    """The CNF image's name; a one-line error when `make setup` has not built it."""
    image = image_name()
    if subprocess.run([podman_binary(), "image", "exists", image], capture_output=True,
                      timeout=PODMAN_S).returncode != 0:
        raise ZeroLossError(f"the CNF image {image} is not built",
                            f"run 'make setup' (it runs {BUILD_SCRIPT.name}), or use --vnf process")
    return image


@dataclass(frozen=True)
class ContainerSpec:
    """One CNF: what runs in it and what it is given."""

    name: str                               # the container's name (kube: the Pod's; the container is NAME-testpmd)
    image: str
    argv: tuple[str, ...]                   # testpmd's command line in the container
    cpus: tuple[int, ...]                   # its cpuset
    socket_dir: str                         # the host folder of the vhost-user sockets, mounted at SHARED_DIR
    runtime_dir: str                        # its EAL runtime folder: the same path in the container and here
    hugepages_mb: int = 256
    launch: str = "run"                     # run | kube
    labels: dict[str, str] = field(default_factory=dict)
    ctl_fifo: str = "ctl.fifo"              # kube: testpmd's standard input, a FIFO in socket_dir

    def command(self) -> tuple[str, ...]:
        """The container's argv. kube: podman 4.3's kube play closes a container's stdin whatever the Pod says
        (stdin: true), so testpmd reads a FIFO in the mounted socket folder that zeroloss holds open for
        writing: its prompt, and an end of file that ends it when zeroloss is gone."""
        if self.launch != "kube":
            return self.argv
        return ("/bin/sh", "-c", f'exec "$@" < {SHARED_DIR}/{self.ctl_fifo}', "testpmd", *self.argv)

    @property
    def container(self) -> str:
        return f"{self.name}-testpmd" if self.launch == "kube" else self.name

    def mounts(self) -> tuple[tuple[str, str, str], ...]:
        """(volume name, host path, container path)."""
        return (("hugepages", HUGEPAGES, HUGEPAGES), ("vhu", self.socket_dir, SHARED_DIR),
                ("dpdk-runtime", self.runtime_dir, self.runtime_dir))

    def run_argv(self) -> list[str]:
        """`podman run` of it: testpmd's prompt on the client's standard input, removed when it exits."""
        args = ["run", "--rm", "-i", "--name", self.name, "--network", "none", "--cpuset-cpus",
                ",".join(map(str, self.cpus))]
        for u in ULIMITS:
            args += ["--ulimit", u]
        for k, v in sorted(self.labels.items()):
            args += ["--label", f"{k}={v}"]
        for _, host, inside in self.mounts():
            args += ["-v", f"{host}:{inside}"]
        return [*args, self.image, *self.command()]


def cnf_pod(spec: ContainerSpec) -> dict:
    """The Pod manifest of the CNF (cnf.k8s: what `host plan --format k8s` prints), for podman kube play: its
    volumes are the host folders run mounts, and its CPUs are the cpuset's (EAL's -l pins the threads)."""
    from zeroloss.host.cnf.k8s import PodSpec, pod_manifest

    return pod_manifest(PodSpec(name=spec.name, image=spec.image, command=spec.command(), cpus=len(spec.cpus),
                                memory_mb=128, hugepages_2mi_mb=spec.hugepages_mb, host_paths=spec.mounts(),
                                stdin=True, image_pull_policy="Never"))


class ContainerVnf(Vnf):
    """A running CNF: ``with ContainerVnf(spec, dir, label, log) as c:``; as a VNF it is the container kind."""

    def __init__(self, spec: ContainerSpec, run_dir: Path, label: str, log_path: Path, telemetry_socket: Path,
                 manifest: dict | None = None, start_timeout_s: float = 60.0):
        self.spec = spec
        self.dir = run_dir
        self.label = label
        self.manifest = manifest
        self.telemetry_socket = telemetry_socket
        self.start_timeout_s = start_timeout_s
        self.conf = run_dir / "containers.conf"
        self.env = {"CONTAINERS_CONF": str(self.conf), "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}
        self.record = run_dir / f"{spec.name}.container"
        self.manifest_path = run_dir / f"{spec.name}.yaml"
        self.start_s: float | None = None
        self.pid: int | None = None         # testpmd's host pid
        self.conmon: int | None = None
        self.held = False
        self.ctl_fd: int | None = None      # kube: the FIFO testpmd reads
        self.proc = ManagedProcess(f"{label} (podman {'logs' if spec.launch == 'kube' else 'run'})",
                                   [podman_binary()], log_path, stdin_pipe=True, env=self.env,
                                   death_signal=signal.SIGTERM)

    def folders(self) -> None:
        """Its run folder, and its EAL runtime folder private to its owner (0700) as DPDK makes every other one
        (its telemetry socket and config are in it): a mkdir mode is cut by the umask, an old folder keeps its own."""
        self.dir.mkdir(parents=True, exist_ok=True)
        runtime = Path(self.spec.runtime_dir)
        runtime.mkdir(mode=0o700, parents=True, exist_ok=True)
        runtime.chmod(0o700)

    def start(self) -> Self:
        """Starts the container and returns once its testpmd's prompt is up; removes it when it cannot."""
        self.folders()
        write_text_atomic(self.conf, containers_conf())
        started = time.monotonic()
        record_container(self.record, self.spec.name, "pod" if self.spec.launch == "kube" else "container")
        try:
            if self.spec.launch == "kube":
                self._kube_play(started)
                self.proc.argv = [podman_binary(), "logs", "--follow", self.spec.container]
            else:
                self.proc.argv = [podman_binary(), *self.spec.run_argv()]
            self.proc.start()
            self.proc.wait_for_log("testpmd>", max(1.0, started + self.start_timeout_s - time.monotonic()))
            log = self.proc.log_path.read_text(errors="replace")
            if "Not all ports were started" in log or "Fail to configure port" in log:
                raise ZeroLossError(f"{self.label}: the container's testpmd could not start its ports: "
                                    f"{self.proc.reason()} (log: {self.proc.log_path})")
            self._await_inspect(started)
            self.start_s = round(time.monotonic() - started, 2)
        except BaseException:
            self.stop()
            raise
        return self

    def _kube_play(self, started: float) -> None:
        """podman kube play of the Pod manifest; then the FIFO its testpmd reads is opened for writing (the
        container's shell waits on it before it runs testpmd)."""
        import yaml  # PyYAML: the manifest as podman reads it

        if self.manifest is None:
            raise ZeroLossError(f"{self.label}: launch kube needs the Pod manifest")
        write_text_atomic(self.manifest_path, yaml.safe_dump(self.manifest, sort_keys=False))
        fifo = Path(self.spec.socket_dir) / self.spec.ctl_fifo
        fifo.unlink(missing_ok=True)
        os.mkfifo(fifo, 0o600)
        podman(["kube", "play", "--network", "none", str(self.manifest_path)], self.env, timeout=60)
        while self.ctl_fd is None:
            try:
                self.ctl_fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
            except OSError as e:  # ENXIO: no reader yet
                if time.monotonic() > started + self.start_timeout_s:
                    raise ZeroLossError(f"{self.label}: the Pod's container never opened its command FIFO: {e}") \
                        from None
                time.sleep(0.05)
        os.set_blocking(self.ctl_fd, True)

    def _await_inspect(self, started: float) -> None:
        """testpmd's and conmon's host pids, from podman inspect (recorded: a later zeroloss kills them)."""
        while True:
            out = podman(["inspect", "--format", "{{.State.Pid}} {{.State.ConmonPid}} {{.State.Status}}",
                          self.spec.container], self.env, check=False).split()
            if len(out) == 3 and out[0] != "0":
                self.pid, self.conmon = int(out[0]), int(out[1])
                record_child(self.dir / "testpmd.pid", self.pid, f"{self.label}'s testpmd (container)")
                record_child(self.dir / "conmon.pid", self.conmon, f"{self.label}'s conmon")
                return
            if len(out) == 3 and out[2] in ("exited", "stopped"):
                raise ZeroLossError(f"{self.label}: the container exited at start: {self.proc.reason()} "
                                    f"(log: {self.proc.log_path})")
            if time.monotonic() > started + self.start_timeout_s:
                raise ZeroLossError(f"{self.label}: the container did not start in {self.start_timeout_s:.0f} s "
                                    f"(podman inspect: {' '.join(out) or 'no such container'})")
            time.sleep(0.1)

    def command(self, line: str) -> None:
        """Types one command at the container testpmd's prompt (the podman client's standard input, or the FIFO)."""
        if self.ctl_fd is None:
            self.proc.send(line)
            return
        try:
            os.write(self.ctl_fd, (line + "\n").encode())
        except OSError as e:
            raise ZeroLossError(f"{self.label}'s testpmd does not read its commands: {e.strerror}") from None

    def pause(self) -> None:
        """Freezes its testpmd (SIGSTOP of its host pid, every thread): frames wait in its virtio rings."""
        if self.pid and proc_state(self.pid) is not None:
            self.held = True
            freeze(self.pid)

    def resume(self) -> None:
        if self.pid and proc_state(self.pid) is not None:
            os.kill(self.pid, signal.SIGCONT)
            self.held = False

    def telemetry(self, timeout: float = 5.0) -> Telemetry:
        """A new connection to the container testpmd's DPDK telemetry (its runtime folder is mounted here)."""
        return Telemetry(self.telemetry_socket, timeout=timeout, check=self.health).connect(wait_s=timeout)

    def placement(self) -> Placement:
        return Placement(kind="container", cpus=self.spec.cpus, boot_s=self.start_s,
                         manifest=json.dumps(self.manifest) if self.manifest else None)

    def health(self) -> None:
        """ComponentDied naming what is gone: the container's testpmd, its conmon, or the podman client."""
        why = self.died()
        if why:
            raise ComponentDied(why)

    def died(self) -> str | None:
        if self.pid is None:
            return self.proc.died()
        where = f"container {self.spec.container}"
        state = proc_state(self.pid)
        if state is None or state == "Z":
            code = self._exit_code(wait_s=2.0)
            if code is None and self.conmon and proc_state(self.conmon) is None:
                return self._conmon_gone(where)
            how = (f"was killed by {signal_name(-(code - 128))}" if code is not None and code > 128 else
                   f"exited with code {code}" if code is not None else "is gone")
            return (f"{self.label}'s testpmd (pid {self.pid} in {where}) {how}; its log's last line: "
                    f"'{self.proc.last_line()}' (log: {self.proc.log_path})")
        if self.conmon and proc_state(self.conmon) is None:
            return self._conmon_gone(where)
        if state in STOPPED and not self.held:
            time.sleep(0.15)
            if proc_state(self.pid) in STOPPED and not self.held:
                return f"{self.label}'s testpmd (pid {self.pid} in {where}) is stopped (SIGSTOP or a debugger)"
        return None

    def _conmon_gone(self, where: str) -> str:
        return (f"{self.label}: conmon (pid {self.conmon}), the monitor of {where}, is gone, and its testpmd with "
                f"it (runc ends a container whose monitor dies)")

    def _exit_code(self, wait_s: float = 0.0) -> int | None:
        """How the container's testpmd ended, once podman knows (None: not known within wait_s): run's client
        exits with its code (128 + n for signal n); kube's container says it when it has exited."""
        deadline = time.monotonic() + wait_s
        while True:
            if self.spec.launch == "run":
                code = self.proc.proc.poll() if self.proc.proc else None
            else:
                try:
                    out = podman(["inspect", "--format", "{{.State.Status}} {{.State.ExitCode}}",
                                  self.spec.container], self.env, check=False).split()
                    code = int(out[1]) if len(out) == 2 and out[0] == "exited" else None
                except (ZeroLossError, ValueError):
                    code = None
            if code is not None or time.monotonic() >= deadline:
                return code
            time.sleep(0.1)

    def stop(self) -> None:
        """testpmd quits; the container (kube: the Pod) is removed whatever state it is in; the client stops."""
        self.close_stats()
        if self.pid and proc_state(self.pid) in STOPPED:
            try:
                    os.kill(self.pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
        self.held = False
        if (self.proc.alive() or self.ctl_fd is not None) and self.pid and proc_state(self.pid) not in (None, "Z"):
            try:
                self.command("quit")
                deadline = time.monotonic() + 5
                while time.monotonic() < deadline and proc_state(self.pid) not in (None, "Z"):
                    time.sleep(0.05)
            except Exception:
                pass
        if self.ctl_fd is not None:
            os.close(self.ctl_fd)
            self.ctl_fd = None
        remove_container(self.spec.name, "pod" if self.spec.launch == "kube" else "container", self.env)
        if self.spec.launch == "kube":
            (Path(self.spec.socket_dir) / self.spec.ctl_fifo).unlink(missing_ok=True)
        self.proc.stop(timeout=5)
        forget_container(self.record)
        for name in ("testpmd.pid", "conmon.pid"):
            (self.dir / name).unlink(missing_ok=True)
        shutil.rmtree(self.spec.runtime_dir, ignore_errors=True)
