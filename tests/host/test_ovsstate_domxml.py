"""Reading OVS state (captured or live through read-only commands) and libvirt domain XML."""

import json
import subprocess

import pytest

from zeroloss.core.errors import ZeroLossError
from zeroloss.host import ovsstate
from zeroloss.host.domxml import parse_domain

from .conftest import FIXTURES, make_fixtures


def test_vsctl_json_decoding():
    text = json.dumps({"headings": ["name", "mtu_request", "options", "status"],
                       "data": [["dpdk0", ["set", []], ["map", [["n_rxq", "2"]]], ["map", []]],
                                ["vhu0", 9000, ["map", []], ["map", [["numa_id", "1"]]]]]})
    rows = ovsstate.parse_vsctl_list(text)
    assert rows[0] == {"name": "dpdk0", "mtu_request": [], "options": {"n_rxq": "2"}, "status": {}}
    ifaces = ovsstate.interfaces_from_rows(rows)
    assert (ifaces[0].mtu_request, ifaces[0].n_rxq, ifaces[1].mtu_request, ifaces[1].numa) == (None, 2, 9000, 1)
    with pytest.raises(ZeroLossError, match="not the JSON output of `ovs-vsctl --format=json list`"):
        ovsstate.parse_vsctl_list("{}")


def test_captured_directory_errors(tmp_path):
    with pytest.raises(ZeroLossError, match="does not exist") as e:
        ovsstate.read_captured(tmp_path / "none")
    assert "ovs-vsctl --timeout=5 --format=json list Interface > vsctl-list-interface.json" in e.value.remedy
    with pytest.raises(ZeroLossError, match="holds none of"):
        ovsstate.read_captured(tmp_path)


def test_live_read_uses_only_read_only_commands(tmp_path, monkeypatch):
    monkeypatch.setenv("OVS_RUNDIR", str(tmp_path))
    state, note = ovsstate.read_live()
    assert state is None and note == f"no OVS database socket at {tmp_path}/db.sock: OVS rules skipped"
    (tmp_path / "db.sock").write_text("")
    seen = []
    captured = FIXTURES / "single-socket" / "ovs"

    def fake_run(argv, **kw):
        seen.append(argv)
        name = next(f for f, cmd in ovsstate.CAPTURE.items() if cmd == argv)
        return subprocess.CompletedProcess(argv, 0, (captured / name).read_text(), "")

    state, note = ovsstate.read_live(run=fake_run)
    assert state.source == "live" and state.pmd_cpus() == (1, 2, 9, 10) and len(state.interfaces) == 3
    assert [a[1:] for a in seen] == [["--timeout=5", "--format=json", "list", "Open_vSwitch"],
                                     ["--timeout=5", "--format=json", "list", "Interface"],
                                     ["--timeout=5", "--format=json", "list", "Bridge"],
                                     ["--timeout=5", "dpif-netdev/pmd-rxq-show"]]
    assert state.bridges == {"br-dpdk": "netdev"}
    failing = lambda argv, **kw: subprocess.CompletedProcess(argv, 1, "", "database connection failed")  # noqa: E731
    state, note = ovsstate.read_live(run=failing)
    assert state is None and "exited 1: database connection failed: OVS rules skipped" in note


def test_domain_fixtures():
    bad = parse_domain((FIXTURES / "domain-untuned.xml").read_text(), "u.xml")
    assert bad.name == "instance-0000002a" and bad.vcpupins == {0: (10,), 1: (46,), 2: (14,), 3: (50,)}
    assert bad.emulatorpin == (10, 14, 46, 50) and bad.memory_kb == 4194304 and bad.hugepage_kb == 1048576
    assert [(i.type, i.queues, i.rx_queue_size) for i in bad.interfaces] == [("vhostuser", 1, None)] * 2
    good = parse_domain((FIXTURES / "domain-tuned.xml").read_text())
    assert good.memory_kb == 8 * 1024 * 1024 and good.hugepage_kb == 1048576 and good.numa_nodes == (0,)
    assert [(i.queues, i.rx_queue_size, i.tx_queue_size) for i in good.interfaces] == [(2, 1024, 1024)]


@pytest.mark.parametrize("text, fault", [("<domain", "is not valid XML"), ("<network/>", "has <network> at the top"),
                                         ("<domain><cputune><vcpupin vcpu='0' cpuset='x'/></cputune></domain>",
                                          "is not a number or range")])
def test_bad_domain_xml(text, fault):
    with pytest.raises(ZeroLossError, match=fault):
        parse_domain(text, "vm.xml")


def test_generated_fixtures_are_reproducible(tmp_path):
    """make_fixtures.py rebuilds the stored trees byte for byte (symlinks included)."""
    mod = make_fixtures()
    mod.HERE = tmp_path
    mod.r740xd()
    mod.single_socket()
    mod.numa_minus_one()
    for name in ("r740xd", "single-socket", "numa-minus-one"):
        stored, built = FIXTURES / name, tmp_path / name
        files = sorted(p.relative_to(stored) for p in stored.rglob("*") if p.is_file() or p.is_symlink())
        assert files == sorted(p.relative_to(built) for p in built.rglob("*") if p.is_file() or p.is_symlink())
        for rel in files:
            if (stored / rel).is_symlink():
                assert (stored / rel).readlink() == (built / rel).readlink()
            else:
                assert (stored / rel).read_bytes() == (built / rel).read_bytes(), rel
