"""`zeroloss host inventory|audit --host`: the read-only collector over a real OpenSSH login (the sshd fixture), against
the same commands with --root / on this host; and the collector's tree against the fixture trees it copies."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from zeroloss.core.errors import ZeroLossError
from zeroloss.drivers.proc import ManagedProcess
from zeroloss.host import collect, remote
from zeroloss.host.audit import Context, run
from zeroloss.host.inventory import collect as inventory
from zeroloss.host.ovsstate import CAPTURE, read_captured
from zeroloss.host.report import inventory_dict
from zeroloss.host.sysfs import Root

from .sshd import free_port

REPO = Path(__file__).resolve().parents[2]
ZEROLOSS = str(Path(sys.executable).with_name("zeroloss"))
FIXTURES = REPO / "tests/fixtures/host"
SCHEMA = "/usr/share/openvswitch/vswitch.ovsschema"
SYSTEM_PYTHON = "/usr/bin/python3"  # what a login's PATH finds on the host: the collector must not need the venv
# what legitimately changes between two reads of one host: free memory and hugepages, interrupt counts, processes
VOLATILE = ("root", "procs", "irq_counts")
# audit rules that read those: free hugepages (a DPDK process may start meanwhile), IRQ counts, processes
VOLATILE_RULES = ("hugepages-short", "irq-count-isolated", "pmd-other-process")


def stable(doc: dict) -> dict:
    """An inventory document without the fields that change between two reads of the same host."""
    doc = {k: v for k, v in doc.items() if k not in VOLATILE}
    doc["nodes"] = [{**n, "mem_free_kb": None, "hugepages": [{**p, "free": None} for p in n["hugepages"]]}
                    for n in doc["nodes"]]
    doc["irqs"] = [{**i, "count": None} for i in doc["irqs"]]
    return doc


def zeroloss(*args: str, env: dict | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([ZEROLOSS, *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def logins(sshd) -> int:
    """Logins the fixture's sshd accepted so far (LogLevel VERBOSE writes one line each)."""
    return sshd.log.read_text(errors="replace").count("Accepted publickey")


@pytest.fixture(scope="module")
def ovsdb(tmp_path_factory):
    """A private ovsdb-server (no vswitchd: pmd-rxq-show fails, as on a kernel-datapath node) with DPDK settings and
    one dpdk port on this host's NIC, so that the OVS rules have something to read; yields its run directory."""
    for tool in ("ovsdb-server", "ovsdb-tool", "ovs-vsctl"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is missing (Debian package openvswitch-switch)")
    if not Path(SCHEMA).is_file():
        pytest.skip(f"no OVS schema at {SCHEMA}")
    rundir = tmp_path_factory.mktemp("ovs")
    subprocess.run(["ovsdb-tool", "create", str(rundir / "conf.db"), SCHEMA], check=True, capture_output=True)
    argv = ["ovsdb-server", str(rundir / "conf.db"), f"--remote=punix:{rundir / 'db.sock'}",
            f"--unixctl={rundir / 'ovsdb.ctl'}"]
    with ManagedProcess("ovsdb-server", argv, rundir / "ovsdb.out"):
        deadline = time.monotonic() + 10
        while not (rundir / "db.sock").exists():
            assert time.monotonic() < deadline, "ovsdb-server did not create db.sock"
            time.sleep(0.02)
        nic = next((n.pci for n in inventory(Root("/")).nics), "0000:00:03.0")
        subprocess.run(["ovs-vsctl", f"--db=unix:{rundir / 'db.sock'}", "--no-wait", "init", "--",
                        "set", "Open_vSwitch", ".", "other_config:dpdk-init=true", "other_config:pmd-cpu-mask=0x2",
                        "other_config:dpdk-lcore-mask=0x1", "other_config:dpdk-socket-mem=1024", "--",
                        "add-br", "br0", "--", "set", "Bridge", "br0", "datapath_type=netdev", "--",
                        "add-port", "br0", "dpdk0", "--", "set", "Interface", "dpdk0", "type=dpdk",
                        f"options:dpdk-devargs={nic}", "options:n_rxq=1"], check=True, capture_output=True)
        yield rundir


# -- the collector on its own (no ssh) ---------------------------------------------------------------------------

def test_collector_runs_the_capture_commands():
    assert collect.OVS_COMMANDS == CAPTURE


@pytest.mark.parametrize("name", ["r740xd", "single-socket", "numa-minus-one", "vm-2core"])
def test_collected_tree_reads_as_the_fixture(name, tmp_path):
    """Everything the inventory and audit read is in the document, links included: the copy reads the same."""
    src = FIXTURES / name
    out = subprocess.run([SYSTEM_PYTHON, "-", "--root", str(src)], input=remote.collector_script(),
                         capture_output=True, check=True).stdout
    doc = remote.parse(out, name)
    assert doc.errors == []
    root, ovs, _ = remote.load(doc, tmp_path / "tree", name)
    ovs0 = read_captured(src / "ovs") if (src / "ovs").is_dir() else None
    inv, inv0 = inventory(root, ovs), inventory(Root(src), ovs0)
    got, want = (json.loads(json.dumps(inventory_dict(i), default=str)) for i in (inv, inv0))
    for doc in (got, want):
        doc["root"] = None
        if doc["ovs"]:
            doc["ovs"]["source"] = None  # 'live' there, the fixture's ovs/ directory here
    assert got == want
    assert [(f.rule, f.message) for f in run(Context(inv, inv.ovs)).findings] == \
        [(f.rule, f.message) for f in run(Context(inv0, inv0.ovs)).findings]
    assert (tmp_path / "tree/sys/bus/pci/devices").is_dir()
    assert any(p.is_symlink() for p in (tmp_path / "tree/sys/bus/pci/devices").iterdir()) == \
        any(p.is_symlink() for p in (src / "sys/bus/pci/devices").iterdir())


@pytest.mark.skipif(not Path("/root/.pyenv/versions/3.6.15/bin/python3").exists(), reason="no Python 3.6 here")
def test_collector_runs_on_python_36():
    """RHEL 8's /usr/bin/python3 is 3.6: the collector must run there unchanged."""
    out = subprocess.run(["/root/.pyenv/versions/3.6.15/bin/python3", "-", "--root", str(FIXTURES / "r740xd")],
                         input=remote.collector_script(), capture_output=True, check=True).stdout
    assert remote.parse(out, "py36").files["proc/cmdline"]


@pytest.mark.parametrize("bad", [{"files": {"../escape": "x"}}, {"files": {"/etc/x": "x"}},
                                 {"links": {"sys/x": "../../../etc"}}, {"links": {"sys/x": "/etc"}}])
def test_materialise_keeps_everything_inside_the_tree(bad, tmp_path):
    doc = {"format": 1, "files": {"proc/cmdline": "ro"}, "binary": {}, "links": {}, "dirs": [], "ovs": {},
           "errors": []}
    for key, value in bad.items():
        doc[key] = {**doc[key], **value}
    with pytest.raises(ZeroLossError, match="not inside|absolute"):
        remote.materialise(remote.CollectorDoc.from_json(doc), tmp_path / "tree")
    assert not (tmp_path / "escape").exists()


def test_materialise_refuses_a_directory_it_did_not_write(tmp_path):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine/notes.txt").write_text("keep")
    doc = remote.CollectorDoc.from_json({"format": 1, "files": {"proc/cmdline": "ro"}, "binary": {}, "links": {},
                                         "dirs": [], "ovs": {}, "errors": []})
    with pytest.raises(ZeroLossError, match="not a tree zeroloss materialised"):
        remote.materialise(doc, tmp_path / "mine")
    remote.materialise(doc, tmp_path / "tree")
    remote.materialise(doc, tmp_path / "tree")  # its own tree is replaced
    assert (tmp_path / "mine/notes.txt").read_text() == "keep"


def test_collector_output_that_is_not_json_is_one_line():
    with pytest.raises(ZeroLossError, match="printed no JSON document"):
        remote.parse(b"Traceback (most recent call last):\n", "lab1")


def test_collector_document_is_found_after_a_login_shells_noise():
    """Ansible's script module runs through a tty (-tt): what the login's shell prints on stderr comes first."""
    doc = {"format": 1, "files": {}, "binary": {}, "links": {}, "dirs": [], "ovs": {}, "errors": []}
    noise = "pyenv: cannot rehash: /root/.pyenv/shims/.pyenv-shim exists\r\n" + json.dumps(doc) + "\r\n"
    assert remote.parse(noise, "lab1").to_json() == doc


# -- over real OpenSSH -------------------------------------------------------------------------------------------

@pytest.mark.bench  # starts an ovsdb-server (OVS): a bench test (tests/tiers.py)
def test_inventory_over_ssh_equals_the_local_one(sshd, ovsdb):
    before = logins(sshd)
    r = zeroloss("host", "inventory", "--host", "lab1", "--ssh-config", str(sshd.ssh_config), "--ovs-rundir",
                 str(ovsdb), "--json")
    assert r.returncode == 0, r.stderr
    assert logins(sshd) - before == 1
    local = zeroloss("host", "inventory", "--root", "/", "--json", env={"OVS_RUNDIR": str(ovsdb)})
    assert local.returncode == 0, local.stderr
    got, want = json.loads(r.stdout), json.loads(local.stdout)
    assert got["root"] == "ssh:lab1"
    assert "dpdk0" in [i["name"] for i in got["ovs"]["interfaces"]]  # OVS read there, through --ovs-rundir
    assert stable(got) == stable(want)


@pytest.mark.bench  # starts an ovsdb-server (OVS): a bench test (tests/tiers.py)
def test_inventory_text_over_ssh_has_the_local_form(sshd, ovsdb):
    r = zeroloss("host", "inventory", "--host", "lab1", "--ssh-config", str(sshd.ssh_config), "--ovs-rundir",
                 str(ovsdb))
    local = zeroloss("host", "inventory", env={"OVS_RUNDIR": str(ovsdb)})
    assert r.returncode == 0 == local.returncode, r.stderr + local.stderr
    assert r.stdout.startswith("host ssh:lab1: ")
    assert "OVS (live): dpdk_initialized=" in r.stdout and "dpdk-init=true" in r.stdout
    assert "note: OVS state read live on lab1 over SSH" in r.stdout
    # the same lines but the first, the node rows (free memory and pages) and the note on where OVS was read
    assert len(r.stdout.splitlines()) == len(local.stdout.splitlines())
    for line, want in zip(r.stdout.splitlines()[1:], local.stdout.splitlines()[1:], strict=True):
        if not line[:1].isdigit() and not line.startswith("note:"):
            assert line == want


@pytest.mark.bench  # starts an ovsdb-server (OVS): a bench test (tests/tiers.py)
def test_audit_over_ssh_finds_what_the_local_audit_finds(sshd, ovsdb):
    before = logins(sshd)
    r = zeroloss("host", "audit", "--host", "lab1", "--ssh-config", str(sshd.ssh_config), "--ovs-rundir", str(ovsdb),
                 "--json")
    assert logins(sshd) - before == 1
    local = zeroloss("host", "audit", "--json", env={"OVS_RUNDIR": str(ovsdb)})
    got, want = json.loads(r.stdout), json.loads(local.stdout)
    assert "isolation-missing" in [f["rule"] for f in got["findings"]]  # a dpdk port, no CPU isolated

    def rules(ids):
        return [i for i in ids if i not in VOLATILE_RULES]

    assert rules(f["rule"] for f in got["findings"]) == rules(f["rule"] for f in want["findings"])
    assert rules(got["passed"]) == rules(want["passed"]) and got["skipped"] == want["skipped"]
    assert r.returncode == local.returncode == 2


def test_host_report_is_one_login(sshd):
    from zeroloss.host.ssh import SshTarget

    before = logins(sshd)
    doc = remote.host_report(SshTarget("lab2", ssh_config=str(sshd.ssh_config)))
    assert logins(sshd) - before == 1
    assert doc["host"] == "lab2" and doc["inventory"]["root"] == "ssh:lab2"
    assert doc["audit"]["root"] == "ssh:lab2" and "exit_code" in doc["audit"]
    json.dumps(doc)


def test_unreachable_host_is_one_line(sshd, tmp_path):
    config = tmp_path / "ssh_config"
    config.write_text(f"Host nowhere\n    HostName 127.0.0.1\n    Port {free_port()}\n    User root\n"
                      f"    IdentityFile {sshd.key}\n    UserKnownHostsFile {sshd.known_hosts}\n")
    for command in ("inventory", "audit"):
        r = zeroloss("host", command, "--host", "nowhere", "--ssh-config", str(config))
        assert r.returncode == 1
        assert r.stdout == ""
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert "cannot reach nowhere over SSH" in r.stderr and "Connection refused" in r.stderr
        assert f"check that `ssh -F {config} nowhere true` works" in r.stderr  # the config that was used
        assert "Traceback" not in r.stderr


def test_audit_of_a_host_whose_ovs_is_down_is_an_error_finding(sshd, tmp_path):
    r = zeroloss("host", "audit", "--host", "lab1", "--ssh-config", str(sshd.ssh_config), "--ovs-rundir",
                 str(tmp_path / "no-ovs"))
    assert r.returncode == 2, r.stdout + r.stderr
    assert f"ERROR    ovs-unreadable: OVS could not be read, so none of its settings were audited: lab1: no OVS " \
           f"database socket at {tmp_path / 'no-ovs' / 'db.sock'}" in r.stdout
    assert "0 errors" not in r.stdout
    r = zeroloss("host", "audit", "--host", "lab1", "--ssh-config", str(sshd.ssh_config), "--ovs-state", "none",
                 "--json")
    assert "ovs-unreadable" not in [f["rule"] for f in json.loads(r.stdout)["findings"]]  # OVS not asked for


def test_host_options_are_checked():
    r = zeroloss("host", "inventory", "--root", "/", "--host", "lab1")
    assert r.returncode == 2 and "not allowed with argument" in r.stderr
    r = zeroloss("host", "audit", "--ssh-config", "/dev/null")
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "go with --host" in r.stderr
