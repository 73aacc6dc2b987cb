"""Running ansible/collect.yml through ansible-runner for `zeroloss host fleet`: each host's outcome as structured
events (ok with collect.py's stdout, unreachable, failed with Ansible's message), host keys checked as OpenSSH checks
them (fleet.py's docstring says why)."""

from __future__ import annotations

import os
import re
import shlex
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from zeroloss.core.codec import Json, Record
from zeroloss.core.errors import ZeroLossError

from . import remote

PLAYBOOK = Path(__file__).resolve().parents[3] / "ansible" / "collect.yml"
COLLECT_TASK = "Run the collector"  # the playbook task whose stdout is collect.py's document (name prefix)
RUN_TIMEOUT_S = 900
ANSIBLE_SSH_ARGS = "-C -o ControlMaster=auto -o ControlPersist=60s"  # Ansible's default ssh_args (ssh connection)
ANSI = re.compile(r"\x1b\[[0-9;]*m")


@dataclass
class Collected:
    """One host's outcome of the playbook: ok with collect.py's stdout, unreachable or failed with Ansible's message."""
    host: str
    status: str  # ok | unreachable | failed
    stdout: str = ""
    message: str = ""


@dataclass(frozen=True, kw_only=True)
class TaskResult(Record):
    """A task's result in an ansible-runner event (`res`): the module's output, or Ansible's message."""
    msg: Json = None
    stderr: Json = None
    stdout: Json = ""
    module_stderr: Json = None


@dataclass(frozen=True, kw_only=True)
class EventData(Record):
    """An ansible-runner event's `event_data`: the host and task it is about and the task's result."""
    host: Json = None
    task: Json = "a task"
    ignore_errors: Json = None
    res: TaskResult | None = None


@dataclass(frozen=True, kw_only=True)
class RunnerEvent(Record):
    """One ansible-runner event: its kind (runner_on_ok, runner_on_failed, runner_on_unreachable, ...) and data."""
    event: Json = None
    event_data: EventData | None = None


def _runner():
    try:
        import ansible_runner
    except ImportError:
        raise ZeroLossError("ansible-runner is not installed", "pip install 'ansible-core>=2.16,<2.19' "
                            "'ansible-runner>=2.3' into zeroloss's venv") from None
    return ansible_runner


def _message(res: TaskResult) -> str:
    text = res.msg or res.stderr or res.stdout or res.module_stderr or "failed"
    text = ANSI.sub("", str(text))
    if "REMOTE HOST IDENTIFICATION HAS CHANGED" in text:
        return ("its SSH host key has changed (REMOTE HOST IDENTIFICATION HAS CHANGED): refused; if the host was "
                "reinstalled, check its new key and replace the line in known_hosts (ssh-keygen -R HOST)")
    if "host key is known" in text:  # OpenSSH: No ED25519 host key is known for HOST and you have requested strict...
        return ("its SSH host key is unknown (not in known_hosts): refused; check it and add it, or let zeroloss add "
                "keys never seen with --accept-new-host-keys")
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1][:300] if lines else "failed"


def ssh_environment(accept_new_host_keys: bool = False) -> dict[str, str]:
    """Ansible's settings that make ssh check host keys as OpenSSH does: Ansible's own checking on, and
    StrictHostKeyChecking first among ssh's arguments (ssh keeps an option's first value), before the
    ANSIBLE_SSH_ARGS of the environment (or Ansible's default ssh_args)."""
    strict = "accept-new" if accept_new_host_keys else "yes"
    rest = os.getenv("ANSIBLE_SSH_ARGS") or ANSIBLE_SSH_ARGS
    return {"ANSIBLE_HOST_KEY_CHECKING": "True", "ANSIBLE_SSH_ARGS": f"-o StrictHostKeyChecking={strict} {rest}"}


def ssh_config_path(ssh_config: str) -> str:
    """--ssh-config as an absolute path (ansible-playbook runs in another folder); one line when it is missing."""
    path = Path(ssh_config).expanduser().resolve()
    if not path.is_file():
        raise ZeroLossError(f"no ssh config file {ssh_config}", "give --ssh-config an existing ssh client config")
    return str(path)


def run_playbook(inventory: str, workdir: Path, limit: str | None = None, ssh_config: str | None = None,
                 ovs_rundir: str | None = None, progress: Callable[[str], None] | None = None,
                 accept_new_host_keys: bool = False) -> list[Collected]:
    """Runs ansible/collect.yml on the inventory's hosts; every host it tried, in inventory order of the events.
    Host keys are checked (a changed key refused; an unknown one refused unless accept_new_host_keys)."""
    if not PLAYBOOK.is_file():
        raise ZeroLossError(f"the playbook {PLAYBOOK} is missing", "run zeroloss from its source checkout")
    if "," not in inventory and not Path(inventory).exists():
        raise ZeroLossError(f"no Ansible inventory {inventory}", "give an inventory file (INI or YAML) or 'h1,h2,'")
    runner = _runner()
    envvars, extravars = _runner_args(ssh_config, ovs_rundir, accept_new_host_keys)
    inv = inventory if "," in inventory else str(Path(inventory).resolve())
    workdir.mkdir(parents=True, exist_ok=True)
    results: dict[str, Collected] = {}
    # ansible-runner turns SIGINT/SIGTERM into a cancel that kills ansible-playbook's process group; its handlers
    # stay installed after the run, so ours (the CLI's SIGTERM -> KeyboardInterrupt) are put back
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        r = runner.run(private_data_dir=str(workdir), playbook=str(PLAYBOOK), inventory=inv, limit=limit,
                       extravars=extravars, envvars=envvars, quiet=True, event_handler=_events(results, progress),
                       timeout=RUN_TIMEOUT_S)
    finally:
        for sig, handler in handlers.items():
            if handler is not None:
                signal.signal(sig, handler)
    if r.status == "canceled":
        raise KeyboardInterrupt
    if r.status == "timeout":
        raise ZeroLossError(f"the Ansible run did not end in {RUN_TIMEOUT_S} s ({len(results)} host(s) done)",
                            "use --limit for fewer hosts at a time, or find the host that hangs")
    if not results:
        tail = [ln for ln in ANSI.sub("", r.stdout.read()).splitlines() if ln.strip()] if r.stdout else []
        why = next((ln for ln in reversed(tail) if "ERROR" in ln or "WARNING" in ln or "skipping" in ln),
                   tail[-1] if tail else f"ansible-playbook ended {r.status} (rc {r.rc})")
        raise ZeroLossError(f"Ansible collected no host from {inventory}{f' (--limit {limit})' if limit else ''}: "
                            f"{why.strip()}", "check the inventory with: ansible-inventory -i INV --graph")
    return sorted(results.values(), key=lambda c: c.host)


def _runner_args(ssh_config: str | None, ovs_rundir: str | None, accept_new_host_keys: bool
                 ) -> tuple[dict[str, str], dict[str, str]]:
    """ansible-runner's environment (the venv's ansible-playbook, no colour, host keys checked) and the playbook's
    variables (where collect.py is, OVS's run folder, the ssh config)."""
    bindir = str(Path(sys.executable).parent)  # ansible-playbook sits next to the venv's python
    envvars = {"PATH": os.pathsep.join([bindir, os.getenv("PATH", "")]), "ANSIBLE_NOCOLOR": "1",
               "ANSIBLE_RETRY_FILES_ENABLED": "0", **ssh_environment(accept_new_host_keys)}
    ssh_args = {"ansible_ssh_common_args": f"-F {shlex.quote(ssh_config_path(ssh_config))}"} if ssh_config else {}
    extravars = {"zeroloss_collector": str(remote.COLLECTOR),
                 **({"zeroloss_ovs_rundir": ovs_rundir} if ovs_rundir else {}), **ssh_args}
    return envvars, extravars


def _events(results: dict[str, Collected], progress: Callable[[str], None] | None) -> Callable[[dict], bool]:
    """ansible-runner's event handler: each host's outcome into results (by host), told to progress."""

    def on_event(doc: dict) -> bool:
        event = RunnerEvent.from_json(doc)
        data = event.event_data or EventData()
        host, kind, res = data.host, event.event, data.res or TaskResult()
        if not host:
            return True
        if kind == "runner_on_unreachable":
            results[host] = Collected(host, "unreachable", message=_message(res))
        elif kind == "runner_on_failed" and not data.ignore_errors:
            results[host] = Collected(host, "failed", message=f"{data.task}: {_message(res)}")
        elif kind == "runner_on_ok" and str(data.task).startswith(COLLECT_TASK):
            results[host] = Collected(host, "ok", stdout=str(res.stdout))
        else:
            return True
        if progress:
            progress(f"{host}: {results[host].status}")
        return True

    return on_event
