"""The test lab itself: a real sshd that can drop connections, and the OVS-DPDK node lab.sh deploys."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from .lab import Lab, LabError


def ssh(server, host: str, *remote: str, timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run(["ssh", "-F", str(server.ssh_config), host, "--", *remote], capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def lab_processes(workdir: Path) -> list[str]:
    """Live processes whose command line names the lab directory (zombies have none)."""
    out = []
    for entry in Path("/proc").iterdir():
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if entry.name.isdigit() and f"{workdir}/" in cmdline:
            out.append(f"{entry.name} {cmdline[:80]}")
    return out


@pytest.mark.parametrize("host", ["lab1", "lab2", "labhost"])
def test_sshd_accepts_the_client_key(sshd, host):
    r = ssh(sshd, host, "id", "-u")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "0"


def test_drop_connections_breaks_open_sessions_and_keeps_listening(sshd):
    session = subprocess.Popen(["ssh", "-F", str(sshd.ssh_config), "lab1", "sleep", "30"],
                               stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 10
        while not sshd.connections() and time.monotonic() < deadline:  # the session is established
            time.sleep(0.05)
        time.sleep(0.3)
        assert session.poll() is None
        sshd.drop_connections()
        assert session.wait(timeout=5) == 255
    finally:
        session.kill()
        session.wait()
    deadline = time.monotonic() + 5  # the killed processes end once scheduled (a loaded host: not at once)
    while sshd.connections() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not sshd.connections()
    assert ssh(sshd, "lab1", "true").returncode == 0


@pytest.mark.bench  # the lab node (lab.sh): OVS-DPDK and a testpmd VNF
def test_lab_is_up_and_reachable_over_ssh(lab, sshd):
    r = ssh(sshd, "lab1", *lab.remote_argv("ovs-vsctl", "show"))
    assert r.returncode == 0, r.stderr
    assert "Bridge br-phy" in r.stdout and "Bridge br-int" in r.stdout
    # ovs-appctl finds vswitchd through OVS_RUNDIR alone, as on a node where OVS runs as a service
    r = ssh(sshd, "lab2", *lab.remote_argv("ovs-appctl", "dpif/show"))
    assert r.returncode == 0, r.stderr
    for port in ("nic0", "nic1", "vhu0", "vhu1", "patch-int", "patch-phy"):
        assert f" {port} " in r.stdout
    assert Path(lab.vnf_telemetry).is_socket()
    assert lab.vsctl("get", "Interface", "vhu0", "link_state").strip() == "up"
    assert lab.vsctl("get", "Port", "nic1", "tag").strip() == "101"
    assert "NORMAL" in lab.ofctl("dump-flows", "br-int")
    assert set(lab.bridges) == {"br-phy", "br-int"}
    assert lab.gen_macs == ["02:00:00:00:00:0a", "02:00:00:00:00:0b"]
    assert lab.ports["vhu1"] == {"bridge": "br-int", "type": "dpdkvhostuserclient", "tag": 101,
                                 "socket": f"{lab.dir}/vhu1.sock"}


@pytest.mark.bench  # the lab node (lab.sh): OVS-DPDK and a testpmd VNF
def test_stop_ends_every_lab_process_and_is_idempotent(lab):
    """The module's last test: it stops the module's lab (one netdev OVS per host), the fixture stops it again."""
    workdir = Path(lab.dir)
    assert lab_processes(workdir)
    with pytest.raises(LabError, match="already running"):
        Lab(workdir).start()
    lab.stop()
    assert lab_processes(workdir) == []
    for prefix in (lab.vnf_file_prefix, lab.ovs_file_prefix):
        assert not (Path("/var/run/dpdk") / prefix).exists()
    assert not (workdir / "lab.json").exists()
    lab.stop()  # twice: nothing to do, no error
