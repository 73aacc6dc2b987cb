#!/usr/bin/python3
"""Stand-ins for `ip` and `virsh` on a lab node with SR-IOV VFs, where this host has no SR-IOV NIC and no libvirt.
Linked as ip / virsh into a directory the test's sshd puts first on the node session's PATH (and nowhere else).

    ip -s -d link show dev PF   for a PF of the test's config: the real `ip -s -d link show dev ens2f0` of an E810
                                (tests/fixtures/sriov/ip_link_ice_example_cnf.txt, kept line for line), with the
                                numbers of the VFs the test maps replaced by live counters: the VF is the VNF's DPDK
                                port zlgen is cabled to (a vhost-user stand-in for a VF, as lab tests use vhost-user for
                                NICs), read from the VNF's telemetry. As ice counts them: RX packets include the
                                discarded frames (ipackets + imissed), RX dropped = imissed, TX dropped = oerrors.
                                Any other ip command runs the real ip.
    virsh dumpxml NAME          the domain XML file the config names for NAME.

build_sysfs(root) lays out the PF and its VFs as the kernel does (see tests/fixtures/sriov/README); the agent reads
it through ZEROLOSS_TEST_SYSFS_ROOT. Config: the JSON file named by ZL_FAKE_SRIOV:
    {"pfs": {"ens2f0": {"template": FILE, "vfs": {"0": [TELEMETRY_SOCKET, PORT], ...}}}, "domains": {NAME: FILE}}
"""

import json
import os
import re
import socket
import sys

REAL_IP = next((p for p in ("/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip") if os.access(p, os.X_OK)), "ip")


def build_sysfs(root, numvfs=4):
    """/sys under root as drivers/pci/iov.c lays it out: PF 0000:37:00.0 (ens2f0, ice; the address the fixture's
    parentdev names) with VFs 0000:37:01.N bound to vfio-pci."""
    from pathlib import Path

    root = Path(root)
    pci = root / "sys/devices/pci0000:30/0000:30:02.0"
    pf = pci / "0000:37:00.0"
    (pf / "net/ens2f0").mkdir(parents=True)
    (pf / "sriov_numvfs").write_text(f"{numvfs}\n")
    (pf / "sriov_totalvfs").write_text("128\n")
    (pf / "vendor").write_text("0x8086\n")
    drivers = root / "sys/bus/pci/drivers"
    for d in ("ice", "vfio-pci"):
        (drivers / d).mkdir(parents=True)
    os.symlink("../../../bus/pci/drivers/ice", pf / "driver")
    devices = root / "sys/bus/pci/devices"
    devices.mkdir(parents=True)
    os.symlink("../../../devices/pci0000:30/0000:30:02.0/0000:37:00.0", devices / "0000:37:00.0")
    for n in range(numvfs):
        vf = pci / f"0000:37:01.{n}"
        vf.mkdir()
        (vf / "vendor").write_text("0x8086\n")
        os.symlink("../0000:37:00.0", vf / "physfn")
        os.symlink(f"../0000:37:01.{n}", pf / f"virtfn{n}")
        os.symlink("../../../bus/pci/drivers/vfio-pci", vf / "driver")
        os.symlink(f"../../../devices/pci0000:30/0000:30:02.0/0000:37:01.{n}", devices / f"0000:37:01.{n}")
    (root / "sys/class/net").mkdir(parents=True)
    os.symlink("../../devices/pci0000:30/0000:30:02.0/0000:37:00.0/net/ens2f0", root / "sys/class/net/ens2f0")
    os.symlink("../../../0000:37:00.0", pf / "net/ens2f0/device")
    return root


def ethdev_stats(path, port):
    """/ethdev/stats,PORT of a DPDK process's telemetry socket."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as s:
        s.settimeout(2)
        s.connect(path)
        s.recv(65536)
        s.send(f"/ethdev/stats,{port}".encode())
        return json.loads(s.recv(1 << 20).decode())["/ethdev/stats"]


def aligned(template_line, values):
    """values laid out as ip laid out the template's numbers: each right-aligned to where the template's ended."""
    ends = [m.end() for m in re.finditer(r"\S+", template_line)]
    out = ""
    for end, v in zip(ends, values, strict=True):
        out += str(v).rjust(max(end - len(out), len(str(v)) + 1))
    return out


def render(pf_conf):
    lines = open(pf_conf["template"]).read().splitlines()
    vf = None
    out = []
    for k, line in enumerate(lines):
        m = re.match(r"^\s*vf (\d+) ", line)
        if m:
            vf = m.group(1)
        prev = lines[k - 1].strip() if k else ""
        if vf in pf_conf["vfs"] and prev.startswith(("RX: bytes", "TX: bytes")):
            st = ethdev_stats(*pf_conf["vfs"][vf])
            values = ([st["ibytes"], st["ipackets"] + st["imissed"], 0, 0, st["imissed"]] if prev.startswith("RX")
                      else [st["obytes"], st["opackets"], st["oerrors"]])
            line = aligned(line, values)
        out.append(line)
    return "\n".join(out) + "\n"


def main():
    conf = json.load(open(os.environ["ZL_FAKE_SRIOV"]))
    tool, args = os.path.basename(sys.argv[0]), sys.argv[1:]
    if tool == "virsh":
        if len(args) == 2 and args[0] == "dumpxml" and args[1] in conf.get("domains", {}):
            sys.stdout.write(open(conf["domains"][args[1]]).read())
            return 0
        sys.stderr.write(f"fake virsh: {args} is not in the test's config\n")
        return 1
    if args[:5] == ["-s", "-d", "link", "show", "dev"] and len(args) == 6 and args[5] in conf.get("pfs", {}):
        sys.stdout.write(render(conf["pfs"][args[5]]))
        return 0
    os.execv(REAL_IP, [REAL_IP, *args])


if __name__ == "__main__":
    sys.exit(main())
