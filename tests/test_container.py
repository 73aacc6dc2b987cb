"""The CNF's podman command line, its Pod manifest and containers.conf (pure parts of vnf.container)."""

from __future__ import annotations

import tomllib

from zeroloss.drivers.vnf.container import SHARED_DIR, ContainerSpec, cnf_pod, containers_conf, image_name
from zeroloss.host.cnf.k8s import validate
from zeroloss.studies.vnfbench import KINDS, _order

ARGV = ("/usr/bin/dpdk-testpmd", "-l", "0,1", "--", "-i")


def spec(launch: str = "run") -> ContainerSpec:
    return ContainerSpec(name="zl-zl1s-ab-vnf0", image="localhost/zeroloss-testpmd:1", argv=ARGV, cpus=(0, 1),
                         socket_dir="/run/zeroloss/s1", runtime_dir="/var/run/dpdk/zl1svnf0", launch=launch,
                         labels={"org.zeroloss.session": "zl1s"}, ctl_fifo="cnf0.fifo")


def test_run_argv_pins_mounts_and_limits():
    argv = spec().run_argv()
    assert argv[:3] == ["run", "--rm", "-i"]
    assert argv[argv.index("--cpuset-cpus") + 1] == "0,1" and argv[argv.index("--network") + 1] == "none"
    mounts = [argv[i + 1] for i, a in enumerate(argv) if a == "-v"]
    assert mounts == ["/dev/hugepages:/dev/hugepages", f"/run/zeroloss/s1:{SHARED_DIR}",
                      "/var/run/dpdk/zl1svnf0:/var/run/dpdk/zl1svnf0"]
    assert [argv[i + 1] for i, a in enumerate(argv) if a == "--ulimit"] == ["nofile=1024:1024", "nproc=1024:1024"]
    i = argv.index("localhost/zeroloss-testpmd:1")
    assert tuple(argv[i + 1:]) == ARGV  # run: testpmd itself, its prompt on the client's stdin


def test_kube_pod_reads_its_commands_from_the_fifo_and_is_a_valid_pod():
    s = spec("kube")
    assert s.container == "zl-zl1s-ab-vnf0-testpmd"
    pod = cnf_pod(s)
    validate(pod)
    (ctr,) = pod["spec"]["containers"]
    assert ctr["command"][:2] == ["/bin/sh", "-c"] and f"< {SHARED_DIR}/cnf0.fifo" in ctr["command"][2]
    assert tuple(ctr["command"][4:]) == ARGV
    assert ctr["resources"]["requests"] == ctr["resources"]["limits"]
    assert ctr["resources"]["limits"]["cpu"] == "2" and ctr["imagePullPolicy"] == "Never"
    paths = {v["hostPath"]["path"] for v in pod["spec"]["volumes"] if "hostPath" in v}
    assert paths == {"/dev/hugepages", "/run/zeroloss/s1", "/var/run/dpdk/zl1svnf0"}


def test_containers_conf_says_runc_and_the_ulimits():
    conf = tomllib.loads(containers_conf())
    assert conf["engine"]["runtime"] == "runc"
    assert conf["containers"]["default_ulimits"] == ["nofile=1024:1024", "nproc=1024:1024"]


def test_image_name_is_a_valid_tag_and_can_be_overridden(monkeypatch):
    monkeypatch.delenv("ZEROLOSS_CNF_IMAGE", raising=False)
    assert image_name("22.11.11-0+deb12u1") == "localhost/zeroloss-testpmd:22.11.11-0_deb12u1"
    monkeypatch.setenv("ZEROLOSS_CNF_IMAGE", "registry.local/mine:2")
    assert image_name() == "registry.local/mine:2"


def test_bench_vnf_rotates_which_kind_goes_first():
    orders = [_order(i) for i in range(3)]
    assert [o[0] for o in orders] == list(KINDS) and all(sorted(o) == sorted(KINDS) for o in orders)


def test_the_runtime_folder_is_private_as_dpdk_makes_its_own(tmp_path):
    """The CNF's DPDK runtime folder (its telemetry socket) was 0755 where DPDK makes the others 0700 (issue 38,
    15): 0700 whatever the umask, and an existing folder is made private too."""
    import os

    from zeroloss.drivers.vnf.container import ContainerVnf

    for existing in (False, True):
        rt = tmp_path / f"dpdk{existing}" / "zl1svnf0"
        if existing:
            rt.mkdir(parents=True, mode=0o755)
            rt.chmod(0o755)
        s = ContainerSpec(**{**spec().__dict__, "runtime_dir": str(rt)})
        old = os.umask(0o022)
        try:
            ContainerVnf(s, tmp_path / f"run{existing}", "cnf", tmp_path / "log", tmp_path / "tel").folders()
        finally:
            os.umask(old)
        assert (rt.stat().st_mode & 0o777) == 0o700, oct(rt.stat().st_mode)
