"""`zeroloss host fleet`: ansible/collect.yml through ansible-runner over the real sshd (lab1 and lab2 are this host),
one host nobody answers for; and the plan-against-node comparison on the fixture trees."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from zeroloss.host.fleet import Deviation, HostResult, deviations, exit_code, fleet_text, safe_name
from zeroloss.host.fleetrun import TaskResult, _message, ssh_environment
from zeroloss.host.inventory import collect
from zeroloss.host.ovsstate import read_captured
from zeroloss.host.plan import Intent, make_plan
from zeroloss.host.sysfs import Root

from .sshd import SshServer, free_port
from .test_remote_host import ovsdb  # noqa: F401  (the module's private ovsdb-server fixture)

ZEROLOSS = str(Path(sys.executable).with_name("zeroloss"))
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures/host"


def fixture(name: str):
    return collect(Root(FIXTURES / name), read_captured(FIXTURES / name / "ovs"))


def fleet(*args: str, cwd: Path | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([ZEROLOSS, "host", "fleet", *args], capture_output=True, text=True, timeout=120,
                          cwd=cwd, env={**os.environ, **(env or {})})


@pytest.fixture(scope="module")
def hosts(sshd, tmp_path_factory) -> Path:
    """An INI inventory: lab1 and lab2 through the fixture's ssh config, nowhere on a port nobody listens on."""
    if shutil.which("ansible-playbook", path=str(Path(sys.executable).parent)) is None:
        pytest.skip("ansible-core is not installed in the venv")
    path = tmp_path_factory.mktemp("fleet") / "hosts.ini"
    path.write_text(f"[nodes]\nlab1\nlab2\nnowhere ansible_host=127.0.0.1 ansible_port={free_port()}\n\n"
                    f"[nodes:vars]\nansible_ssh_common_args='-F {sshd.ssh_config}'\n")
    return path


def nic_name() -> str:
    """A NIC of this host for --ports: it has none bound to vfio-pci, which the plan would take by default."""
    nics = collect(Root("/")).nics
    if not nics:
        pytest.skip("this host has no PCI NIC to plan for")
    return nics[0].name or nics[0].pci


# -- the plan against the node (no Ansible) ----------------------------------------------------------------------

def test_a_node_tuned_as_planned_has_no_deviation():
    """single-socket is tuned as `host plan --mtu 9000 --pmd-cores-per-node 2 --vm-memory-gb 50` (before the plan
    turned PMD auto load balance on)."""
    inv = fixture("single-socket")
    intent = Intent(mtu=9000, pmd_cores_per_node=2, vm_memory_gb=50, pmd_auto_lb=False)
    rows = deviations(make_plan(inv, intent), inv)
    assert [r for r in rows if r.status != "same"] == []
    assert {"kernel isolcpus", "1 GB hugepages node 0", "OVS pmd-cpu-mask", "OVS dpdk-socket-mem",
            "port 0000:17:00.0 n_rxq"} <= {r.setting for r in rows}


def test_the_whitepaper_node_deviates_where_the_paper_fixed_it():
    inv = fixture("r740xd")
    rows = {r.setting: r for r in deviations(make_plan(inv, Intent(mtu=9000)), inv) if r.status == "differs"}
    assert rows["port 0000:3b:00.0 n_rxq"].actual == "unset (1)"  # 1 RX queue before the fix (Table 1)
    assert rows["port 0000:3b:00.0 n_rxq_desc"].actual == "unset (2048)"
    assert rows["OVS dpdk-extra -n (memory channels)"].actual == "unset"
    assert "kernel default_hugepagesz" not in rows  # 1GB on the node, 1G in the plan: the same size
    assert "port 0000:3b:00.0 mtu_request" not in rows


def test_without_ovs_the_ovs_settings_are_not_compared():
    inv = collect(Root(FIXTURES / "numa-minus-one"))
    rows = deviations(make_plan(inv, Intent()), inv, "no OVS database socket at /x: OVS rules skipped")
    assert rows[-1].to_json() == {"setting": "OVS other_config and ports",
                                  "planned": "dpdk-init, masks, socket memory, ports",
                                  "actual": "no OVS database socket at /x", "status": "unknown"}
    assert rows[-1] == Deviation.from_json(rows[-1].to_json())


def test_exit_code_and_file_names():
    def hosts(*docs: dict) -> list[HostResult]:
        return [HostResult.from_json(d) for d in docs]

    ok = {"status": "ok", "counts": {"error": 0, "warning": 3, "info": 0}, "plan_error": None}
    assert exit_code(hosts(ok)) == 0
    assert exit_code(hosts(ok, {**ok, "counts": {"error": 1}})) == 2
    assert exit_code(hosts({**ok, "counts": {"error": 1}}, {"status": "unreachable"})) == 1
    assert exit_code(hosts({**ok, "plan_error": "no NIC is bound"})) == 1
    # a host without OVS has nothing to plan: its ovs-unreadable finding (an error) decides, not the missing plan
    no_ovs = {**ok, "counts": {"error": 1}, "plan_error": "no NIC is bound",
              "audit": {"findings": [{"rule": "ovs-unreadable", "severity": "error", "message": "no OVS"}]}}
    assert exit_code(hosts(no_ovs)) == 2
    text = fleet_text({"results": [{**no_ovs, "host": "n1", "counts": {"error": 1, "warning": 0, "info": 0},
                                    "deviations": []}], "limit": None, "inventory": "inv", "exit_code": 2})
    rows = [ln.split() for ln in text.splitlines() if ln.startswith("n1 ")]
    assert rows[0][1:4] == ["ok", "(no", "OVS)"], text  # as docs/lab.md says: ok (no OVS), not "no plan"
    assert "plan: none: no OVS was read, nothing to tune" in text and "not possible" not in text
    assert [safe_name(h) for h in ("lab1", "10.0.0.1", "a/b", "..", "fleet")] == \
        ["lab1", "10.0.0.1", "a_b", "_..", "_fleet"]


def test_ssh_checks_host_keys_whatever_the_environment_says(monkeypatch):
    """ansible-runner sets ANSIBLE_HOST_KEY_CHECKING=False when it is unset; ssh keeps an option's first value."""
    monkeypatch.setenv("ANSIBLE_SSH_ARGS", "-o StrictHostKeyChecking=no -o ControlMaster=no")
    env = ssh_environment()
    assert env["ANSIBLE_HOST_KEY_CHECKING"] == "True"
    assert env["ANSIBLE_SSH_ARGS"] == "-o StrictHostKeyChecking=yes -o StrictHostKeyChecking=no -o ControlMaster=no"
    monkeypatch.delenv("ANSIBLE_SSH_ARGS")
    assert ssh_environment(accept_new_host_keys=True)["ANSIBLE_SSH_ARGS"] == \
        "-o StrictHostKeyChecking=accept-new -C -o ControlMaster=auto -o ControlPersist=60s"


def test_host_key_failures_say_what_happened():
    changed = ("Failed to connect to the host via ssh: @@@@@@@@\r\n@    WARNING: REMOTE HOST IDENTIFICATION HAS "
               "CHANGED!     @\r\n...\r\nHost key verification failed.")
    assert _message(TaskResult(msg=changed)).startswith("its SSH host key has changed")
    unknown = ("Failed to connect to the host via ssh: No ED25519 host key is known for [127.0.0.1]:2222 and you "
               "have requested strict checking.\r\nHost key verification failed.")
    assert "--accept-new-host-keys" in _message(TaskResult(msg=unknown))


def test_a_missing_inventory_is_one_line():
    r = fleet("--inventory", "/nonexistent/hosts.ini")
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "no Ansible inventory" in r.stderr


# -- through Ansible over real OpenSSH ---------------------------------------------------------------------------

@pytest.mark.bench  # starts an ovsdb-server (OVS): a bench test (tests/tiers.py)
def test_fleet_reports_both_hosts_and_the_unreachable_one(hosts, ovsdb, tmp_path):  # noqa: F811
    out = tmp_path / "out"
    r = fleet("--inventory", str(hosts), "--output", str(out), "--ovs-rundir", str(ovsdb), "--ports", nic_name())
    assert r.returncode == 1, r.stderr  # a host could not be collected
    assert r.stderr == ""
    lines = r.stdout.splitlines()
    assert lines[0].endswith(": 3 host(s), 2 ok, 1 unreachable")
    rows = {ln.split()[0]: ln.split()[1] for ln in lines[4:7]}  # the table under its header and rule
    assert rows == {"lab1": "ok", "lab2": "ok", "nowhere": "unreachable"}
    assert any(ln.startswith("== nowhere: UNREACHABLE: ") and "Connection refused" in ln for ln in lines)
    for host in ("lab1", "lab2"):
        assert any(ln.startswith(f"== {host} (hostname ") for ln in lines)
    assert "ERROR    isolation-missing: " in r.stdout  # a DPDK port in OVS, no CPU isolated
    assert " n_rxq: plan 2, node 1" in r.stdout  # the planned 2 RX queues against the port's n_rxq=1
    assert lines[-1] == "exit 1: a host could not be collected or planned"

    assert sorted(p.name for p in out.iterdir()) == ["fleet.json", "lab1", "lab1.json", "lab2", "lab2.json",
                                                      "nowhere.json"]
    summary = json.loads((out / "fleet.json").read_text())
    assert [(h["host"], h["status"]) for h in summary["hosts"]] == \
        [("lab1", "ok"), ("lab2", "ok"), ("nowhere", "unreachable")]
    assert summary["exit_code"] == 1
    lab1 = json.loads((out / "lab1.json").read_text())
    assert lab1["inventory"]["root"] == "ansible:lab1"
    assert "dpdk0" in [i["name"] for i in lab1["inventory"]["ovs"]["interfaces"]]
    devs = {d["setting"]: d for d in lab1["deviations"]}
    assert devs["OVS pmd-cpu-mask"] == {"setting": "OVS pmd-cpu-mask", "planned": "0x2 (CPUs 1)",
                                        "actual": "0x2 (CPUs 1)", "status": "same"}  # core 0 is housekeeping
    assert devs["OVS dpdk-init"]["status"] == "same"
    # the tree kept for the host reads again with --root, to the same findings
    again = subprocess.run([ZEROLOSS, "host", "audit", "--root", str(out / "lab1"), "--json"], capture_output=True,
                           text=True, timeout=60)
    assert [f["rule"] for f in json.loads(again.stdout)["findings"]] == [f["rule"] for f in lab1["audit"]["findings"]]


@pytest.mark.bench  # starts an ovsdb-server (OVS): a bench test (tests/tiers.py)
def test_fleet_exit_code_says_error_findings_when_every_host_answers(hosts, ovsdb):  # noqa: F811
    r = fleet("--inventory", str(hosts), "--limit", "lab1,lab2", "--ovs-rundir", str(ovsdb), "--ports", nic_name(),
              "--json")
    assert r.returncode == 2, r.stderr
    doc = json.loads(r.stdout)
    assert [h["host"] for h in doc["hosts"]] == ["lab1", "lab2"]
    assert all(h["counts"]["error"] >= 1 for h in doc["hosts"])
    assert doc["exit_code"] == 2


# -- host keys, as OpenSSH checks them ---------------------------------------------------------------------------

@pytest.fixture
def keyhost(tmp_path):
    """A fresh sshd (its own host key and port: no ssh master of another test is reused), a client config without
    any StrictHostKeyChecking (zeroloss decides) and an empty known_hosts; yields (server, config, known_hosts)."""
    if shutil.which("ansible-playbook", path=str(Path(sys.executable).parent)) is None:
        pytest.skip("ansible-core is not installed in the venv")
    known = tmp_path / "known_hosts"
    known.write_text("")
    with SshServer(tmp_path / "sshd") as server:
        config = tmp_path / "ssh_config"
        config.write_text(f"Host keyhost\n    HostName 127.0.0.1\n    Port {server.port}\n    User root\n"
                          f"    IdentityFile {server.key}\n    IdentitiesOnly yes\n    UserKnownHostsFile {known}\n"
                          "    GlobalKnownHostsFile /dev/null\n    UpdateHostKeys no\n    LogLevel ERROR\n")
        (tmp_path / "hosts.ini").write_text("keyhost\n")  # (ansible-runner writes 'h1,' to a file: one host 'h1,')
        yield server, config, known


def logins(server: SshServer) -> int:
    return server.log.read_text(errors="replace").count("Accepted publickey")


def test_fleet_refuses_a_changed_host_key_even_with_accept_new(keyhost, sshd, tmp_path):
    server, config, known = keyhost
    known.write_text(server.known_hosts_line(key=sshd.host_key))  # another host's key under this address
    for accept in ((), ("--accept-new-host-keys",)):
        r = fleet("--inventory", str(tmp_path / "hosts.ini"), "--ssh-config", str(config), *accept)
        assert r.returncode == 1, r.stdout + r.stderr
        assert "== keyhost: UNREACHABLE: its SSH host key has changed (REMOTE HOST IDENTIFICATION HAS CHANGED)" \
            in r.stdout
    assert logins(server) == 0  # the collector never ran
    assert known.read_text() == server.known_hosts_line(key=sshd.host_key)


def test_fleet_adds_an_unknown_host_key_only_when_asked(keyhost, tmp_path):
    server, config, known = keyhost
    r = fleet("--inventory", "hosts.ini", "--ssh-config", config.name, cwd=tmp_path)  # relative to the cwd
    assert r.returncode == 1, r.stdout + r.stderr
    assert "== keyhost: UNREACHABLE: its SSH host key is unknown (not in known_hosts): refused" in r.stdout
    assert f"check that `ssh -F {config} keyhost true` works without a password prompt" in r.stdout
    assert known.read_text() == "" and logins(server) == 0
    plan = ("--ovs-rundir", str(tmp_path / "no-ovs"), "--ports", nic_name())
    r = fleet("--inventory", "hosts.ini", "--ssh-config", config.name, "--accept-new-host-keys", *plan, cwd=tmp_path)
    assert logins(server) >= 1 and server.known_hosts_line().split()[2] in known.read_text()
    # no OVS on the host at this run directory: a finding (error), shown in the table, not "0 errors"
    assert r.returncode == 2, r.stdout + r.stderr
    row = next(ln for ln in r.stdout.splitlines() if ln.startswith("keyhost "))
    assert row.split()[1:4] == ["ok", "(no", "OVS)"]
    assert "ERROR    ovs-unreadable: OVS could not be read" in r.stdout
    # the key is known now: checked and accepted without the flag
    again = fleet("--inventory", "hosts.ini", "--ssh-config", str(config), *plan, cwd=tmp_path)
    assert again.returncode == 2, again.stdout + again.stderr
