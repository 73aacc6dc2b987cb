"""Hugepage checks read sysfs and /proc/mounts; faults name the remedy."""

import pytest

from zeroloss.core.errors import ZeroLossError
from zeroloss.drivers.dpdk import hugepages


def make_sysfs(tmp_path, total, free, size_kb=2048):
    d = tmp_path / "hp" / f"hugepages-{size_kb}kB"
    d.mkdir(parents=True)
    (d / "nr_hugepages").write_text(f"{total}\n")
    (d / "free_hugepages").write_text(f"{free}\n")
    mounts = tmp_path / "mounts"
    mounts.write_text("proc /proc proc rw 0 0\nnodev /dev/hugepages hugetlbfs rw,relatime,pagesize=2M 0 0\n")
    return tmp_path / "hp", mounts


def test_enough_free_pages_pass(tmp_path):
    root, mounts = make_sysfs(tmp_path, 1024, 512)
    hugepages.require(1024, root, mounts)  # 512 x 2 MiB = 1024 MiB


def test_too_few_pages_name_the_remedy(tmp_path):
    root, mounts = make_sysfs(tmp_path, 1024, 100)
    with pytest.raises(ZeroLossError) as e:
        hugepages.require(512, root, mounts)
    assert "200 MiB" in str(e.value) and "make setup" in str(e.value)


def test_unmounted_hugetlbfs_is_an_error(tmp_path):
    root, mounts = make_sysfs(tmp_path, 1024, 1024)
    mounts.write_text("proc /proc proc rw 0 0\n")
    with pytest.raises(ZeroLossError, match="hugetlbfs"):
        hugepages.require(10, root, mounts)


def test_pools_lists_each_size(tmp_path):
    root, _ = make_sysfs(tmp_path, 4, 2, size_kb=1048576)
    (p,) = hugepages.pools(root)
    assert (p.size_kb, p.total, p.free, p.free_mb) == (1048576, 4, 2, 2048)
