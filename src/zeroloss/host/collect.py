#!/usr/bin/env python3
"""zeroloss host collector: reads, in one go, every file `zeroloss host inventory|audit` reads under a root and the
read-only OVS outputs, and prints one JSON document on stdout.

Self-contained (standard library only, Python >= 3.6) so it runs as shipped: `python3 - < collect.py` over ssh, or
Ansible's script module. Nothing is written on the host; OVS is only asked with read-only ovs-vsctl/ovs-appctl.

    python3 collect.py [--root DIR] [--ovs-rundir DIR]

Output: {"format": 1, "hostname", "root", "files": {relpath: text}, "binary": {relpath: base64}, "links":
{relpath: target}, "dirs": [relpath], "ovs": {capture file name: text or null}, "ovs_note", "errors": [...],
"elapsed_s"}. Paths are relative to the root and physical: every symlink on the way is in "links" (its target as
the kernel wrote it), every file under its real path, as a tree capture keeps them. Directory listings the inventory
makes are in "dirs" (entry names it uses only). proc/PID/status keeps the lines the inventory reads.
"""

import argparse
import base64
import fnmatch
import json
import os
import re
import socket
import subprocess
import sys
import time

FORMAT = 1
MAX_BYTES = 1 << 20  # a larger file is skipped (no sysfs/procfs file the inventory reads comes near it)
MAX_PROCS = 10000  # user processes kept (kernel threads are never kept: the inventory skips them)
MAX_LINKS = 16  # symlinks followed for one path
MAX_ERRORS = 50
PF_KTHREAD = 0x00200000
STATUS_KEYS = ("Name", "State", "Tgid", "PPid", "Cpus_allowed", "Cpus_allowed_list", "Mems_allowed_list")

# directories whose entries the inventory lists, with the entry names it uses (the rest are not kept)
LISTS = (
    ("sys/devices/system/node", r"node[0-9]+"),
    ("sys/devices/system/node/node*/hugepages", r"hugepages-[0-9]+kB"),
    ("sys/kernel/mm/hugepages", r"hugepages-[0-9]+kB"),
    ("sys/devices/system/cpu", r"cpu[0-9]+"),
    ("sys/devices/system/cpu/cpu*/cpuidle", r"state[0-9]+"),
    ("sys/bus/pci/devices", r".*"),
    ("sys/bus/pci/devices/*", r"virtio.*"),
    ("sys/bus/pci/devices/*/net", r".*"),
    ("sys/bus/pci/devices/*/virtio*/net", r".*"),
    ("sys/firmware/dmi/entries", r"17-.*"),
    ("sys/class/iommu", r".*"),
    ("sys/kernel/iommu_groups", r".*"),
    ("proc/irq", r"[0-9]+"),
)
# files the inventory reads as text (a missing one is simply absent, as the inventory treats it)
FILES = (
    "sys/devices/system/node/node*/cpulist",
    "sys/devices/system/node/node*/meminfo",
    "sys/devices/system/node/node*/hugepages/hugepages-*/nr_hugepages",
    "sys/devices/system/node/node*/hugepages/hugepages-*/free_hugepages",
    "sys/kernel/mm/hugepages/hugepages-*/nr_hugepages",
    "sys/kernel/mm/hugepages/hugepages-*/free_hugepages",
    "sys/devices/system/cpu/online",
    "sys/devices/system/cpu/isolated",
    "sys/devices/system/cpu/nohz_full",
    "sys/devices/system/cpu/cpu*/topology/physical_package_id",
    "sys/devices/system/cpu/cpu*/topology/core_id",
    "sys/devices/system/cpu/cpu*/topology/thread_siblings_list",
    "sys/devices/system/cpu/cpu*/topology/core_cpus_list",
    "sys/devices/system/cpu/cpu*/cpufreq/scaling_governor",
    "sys/devices/system/cpu/cpu*/cpuidle/state*/name",
    "sys/devices/system/cpu/cpu*/cpuidle/state*/latency",
    "sys/devices/system/cpu/cpu*/cpuidle/state*/disable",
    "sys/bus/pci/devices/*/class",
    "sys/bus/pci/devices/*/vendor",
    "sys/bus/pci/devices/*/device",
    "sys/bus/pci/devices/*/numa_node",
    "sys/bus/pci/devices/*/current_link_speed",
    "sys/bus/pci/devices/*/current_link_width",
    "sys/bus/pci/devices/*/max_link_speed",
    "sys/bus/pci/devices/*/max_link_width",
    "sys/class/net/*/mtu",
    "sys/class/net/*/speed",
    "sys/class/net/*/operstate",
    "proc/irq/*/smp_affinity_list",
    "proc/cmdline",
    "proc/cpuinfo",
    "proc/meminfo",
    "proc/interrupts",
    "proc/version",
    "proc/sys/kernel/osrelease",
    "etc/tuned/active_profile",
)
BINARY = ("sys/firmware/dmi/entries/17-*/raw", "dev/cpu_dma_latency")
LINKS = ("sys/bus/pci/devices/*/driver",)  # only the link itself is read (its target's name is the driver)

# capture file name -> read-only OVS command (the same table as zeroloss.host.ovsstate.CAPTURE; a test checks it)
OVS_COMMANDS = {
    "vsctl-list-open_vswitch.json": ["ovs-vsctl", "--timeout=5", "--format=json", "list", "Open_vSwitch"],
    "vsctl-list-interface.json": ["ovs-vsctl", "--timeout=5", "--format=json", "list", "Interface"],
    "vsctl-list-bridge.json": ["ovs-vsctl", "--timeout=5", "--format=json", "list", "Bridge"],
    "pmd-rxq-show.txt": ["ovs-appctl", "--timeout=5", "dpif-netdev/pmd-rxq-show"],
}
EXTRA_PATH = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")


class Collector:
    """Walks the root as the inventory does and keeps what it reads, links and listings as physical paths."""

    def __init__(self, root):
        self.root = root
        self.files = {}
        self.binary = {}
        self.links = {}
        self.dirs = set()
        self.errors = []
        self._phys = {"": ""}  # logical path -> physical path (None: leaves the root or a link loop)

    def error(self, text):
        if len(self.errors) < MAX_ERRORS:
            self.errors.append(text)
        elif len(self.errors) == MAX_ERRORS:
            self.errors.append("more errors not shown")

    def real(self, rel):
        """The physical path of rel (no symlink on the way), recording each link passed; None outside the root."""
        if rel in self._phys:
            return self._phys[rel]
        self._phys[rel] = None  # while it resolves: a link loop back to it ends here
        head, _, name = rel.rpartition("/")
        parent = self.real(head)
        out = None
        if parent is not None:
            out = self._follow(parent + "/" + name if parent else name, 0)
        self._phys[rel] = out
        return out

    def _follow(self, path, depth):
        """path has a physical parent; follow it while it is a link."""
        full = os.path.join(self.root, path)
        if not os.path.islink(full):
            return path
        if depth >= MAX_LINKS:
            return None
        try:
            target = os.readlink(full)
        except OSError:
            return None
        self.links[path] = target
        head = path.rpartition("/")[0]
        joined = target.lstrip("/") if target.startswith("/") else (head + "/" + target if head else target)
        resolved = os.path.normpath(joined)
        if resolved.startswith("..") or resolved == ".":
            return None
        parts = resolved.split("/")  # the target may itself pass through links
        parent = self.real("/".join(parts[:-1])) if len(parts) > 1 else ""
        if parent is None:
            return None
        return self._follow(parent + "/" + parts[-1] if parent else parts[-1], depth + 1)

    def expand(self, pattern):
        """Logical paths matching a glob whose components may hold * (sorted, like the inventory's listdir)."""
        paths = [""]
        for comp in pattern.split("/"):
            nxt = []
            for p in paths:
                if not any(c in comp for c in "*?["):
                    nxt.append(p + "/" + comp if p else comp)
                    continue
                for name in self.listdir(p):
                    if fnmatch.fnmatchcase(name, comp):
                        nxt.append(p + "/" + name if p else name)
            paths = nxt
        return paths

    def listdir(self, rel):
        phys = self.real(rel) if rel else ""
        if phys is None:
            return []
        try:
            return sorted(os.listdir(os.path.join(self.root, phys)))
        except OSError:
            return []

    def read(self, rel, binary=False):
        """Keep one file's content under its physical path; absent files are skipped quietly."""
        phys = self.real(rel)
        if phys is None:
            return None
        try:
            with open(os.path.join(self.root, phys), "rb") as f:
                data = f.read(MAX_BYTES + 1)
        except OSError as e:
            if e.errno in (1, 13):  # EPERM, EACCES: the collector is not root
                self.error(f"{rel}: {e.strerror}")
            return None
        if len(data) > MAX_BYTES:
            self.error(f"{rel}: larger than {MAX_BYTES} bytes, skipped")
            return None
        if not binary:
            try:
                self.files[phys] = data.decode("utf-8")
                return self.files[phys]
            except UnicodeDecodeError:
                pass
        self.binary[phys] = base64.b64encode(data).decode("ascii")
        return data

    def keep_listing(self, pattern, names):
        """Record the entries the inventory uses of every directory matching pattern (as links or directories)."""
        keep = re.compile(names)
        for rel in self.expand(pattern):
            listed = self.real(rel)
            if listed and os.path.isdir(os.path.join(self.root, listed)):
                self.dirs.add(listed)  # kept even when empty: 'no IOMMU units' reads the same from the copy
            for name in self.listdir(rel):
                if not keep.fullmatch(name):
                    continue
                parent = self.real(rel)
                child = parent + "/" + name if parent else name
                if os.path.islink(os.path.join(self.root, child)):
                    try:
                        self.links[child] = os.readlink(os.path.join(self.root, child))
                    except OSError:
                        continue
                else:
                    self.dirs.add(child)

    def keep_link(self, pattern):
        for rel in self.expand(pattern):
            head, _, name = rel.rpartition("/")
            parent = self.real(head)
            if parent is None:
                continue
            path = parent + "/" + name if parent else name
            try:
                self.links[path] = os.readlink(os.path.join(self.root, path))
            except OSError:
                continue

    def processes(self):
        """proc/PID/stat and the status lines the inventory reads, for user processes (kernel threads left out)."""
        kept = 0
        for entry in self.listdir("proc"):
            if not entry.isdigit():
                continue
            stat = self._text(f"proc/{entry}/stat")
            flags = _stat_flags(stat) if stat is not None else None
            if flags is None or flags & PF_KTHREAD:
                continue
            status = self._text(f"proc/{entry}/status")
            if status is None:
                continue  # exited meanwhile
            if kept >= MAX_PROCS:
                self.error(f"more than {MAX_PROCS} processes: the rest are left out")
                break
            lines = [ln for ln in status.splitlines() if ln.partition(":")[0] in STATUS_KEYS]
            self.files[f"proc/{entry}/stat"] = stat
            self.files[f"proc/{entry}/status"] = "\n".join(lines) + "\n"
            kept += 1

    def _text(self, rel):
        try:
            with open(os.path.join(self.root, rel), "rb") as f:
                return f.read(MAX_BYTES).decode("utf-8", "replace")
        except OSError:
            return None


def _stat_flags(text):
    """Field 9 (flags) of /proc/PID/stat; comm (field 2) may hold spaces and ')'."""
    head, sep, rest = text.rpartition(")")
    fields = rest.split()
    if not sep or len(fields) < 7:
        return None
    try:
        return int(fields[6])
    except ValueError:
        return None


def read_ovs(root, rundir, errors):
    """({capture name: output or None}, note): live read-only commands on '/', a tree's ovs/ directory otherwise."""
    out = dict.fromkeys(OVS_COMMANDS)
    if root != "/":
        found = False
        for name in OVS_COMMANDS:
            try:
                with open(os.path.join(root, "ovs", name), "rb") as f:
                    out[name] = f.read().decode("utf-8", "replace")
                    found = True
            except OSError:
                pass
        return out, ("OVS state captured in the tree's ovs/ directory" if found else "no ovs/ directory in the tree")
    rundir = rundir or os.getenv("OVS_RUNDIR")
    env = dict(os.environ, **({"OVS_RUNDIR": rundir} if rundir else {}),
               PATH=os.pathsep.join([os.getenv("PATH", "")] + list(EXTRA_PATH)))
    sock = os.path.join(rundir or "/var/run/openvswitch", "db.sock")
    if not os.path.exists(sock):
        return out, f"no OVS database socket at {sock}"
    for name, argv in OVS_COMMANDS.items():
        try:
            r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,  # noqa: UP022 (3.6)
                               timeout=10)
        except (OSError, subprocess.TimeoutExpired) as e:
            errors.append("`{}` failed: {}".format(" ".join(argv), e))
            continue
        if r.returncode == 0:
            out[name] = r.stdout.decode("utf-8", "replace")
        else:
            errors.append("`{}` exited {}: {}".format(" ".join(argv), r.returncode,
                                                       r.stderr.decode("utf-8", "replace").strip()[:200]))
    return out, f"OVS state read with read-only ovs-vsctl/ovs-appctl (database {sock})"


def collect(root="/", ovs_rundir=None):
    """The whole document for one host."""
    start = time.monotonic()
    c = Collector(root)
    for pattern, names in LISTS:
        c.keep_listing(pattern, names)
    for pattern in FILES:
        for rel in c.expand(pattern):
            c.read(rel)
    for pattern in BINARY:
        for rel in c.expand(pattern):
            c.read(rel, binary=True)
    for pattern in LINKS:
        c.keep_link(pattern)
    c.processes()
    ovs, note = read_ovs(root, ovs_rundir, c.errors)
    return {"format": FORMAT, "hostname": socket.gethostname(), "root": root, "files": c.files, "binary": c.binary,
            "links": c.links, "dirs": sorted(c.dirs), "ovs": ovs, "ovs_note": note, "errors": c.errors,
            "elapsed_s": round(time.monotonic() - start, 3)}


def main(argv=None):
    p = argparse.ArgumentParser(prog="collect.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--root", default="/", help="read the tree under ROOT instead of / (OVS from ROOT/ovs/)")
    p.add_argument("--ovs-rundir", help="OVS run directory holding db.sock (default $OVS_RUNDIR or "
                                        "/var/run/openvswitch)")
    args = p.parse_args(argv)
    root = args.root if args.root == "/" else os.path.abspath(args.root)
    if not os.path.isdir(root):
        sys.stderr.write(f"collect.py: --root {root} is not a directory\n")
        return 2
    json.dump(collect(root, args.ovs_rundir), sys.stdout, separators=(",", ":"), sort_keys=True)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
