#!/usr/bin/env bash
# Installs and prepares everything zeroloss needs on Debian 12, as root. Idempotent: steps
# already done are skipped, so `make test` can run it first on any machine.
set -euo pipefail
cd "$(dirname "$0")/.."

PKGS=(dpdk dpdk-dev libdpdk-dev openvswitch-switch-dpdk python3-openvswitch meson ninja-build pkg-config
      gcc make libjansson-dev python3 python3-venv python3-pip python3-pyelftools iproute2
      chromium   # chromium: the report test renders the HTML report headless
      qemu-system-x86 busybox-static cpio  # the VNF guest (--vnf vm): QEMU, the guest's shell, its initramfs
      openssh-client openssh-server  # lab mode: ssh to the DUT host; the lab tests' sshd on 127.0.0.1
      postgresql  # tests/history: Debian's PostgreSQL 15 (initdb, pg_ctl) beside SQLite for `zeroloss history`
      podman runc conmon catatonit)  # the CNF (--vnf container): podman with runc (crun refuses this host's hybrid
                                     # cgroups), catatonit for kube play's infra container
# 2 MiB pages: OVS (1024 MB) + zlgen (256 MB) + the VNFs (pvvp: two 512 MB guests, or two 256 MB testpmds)
HUGEPAGES=${ZEROLOSS_HUGEPAGES:-1280}

say() { printf 'setup: %s\n' "$*"; }

if [ "$(id -u)" -ne 0 ]; then
	echo "setup: must run as root (apt packages, hugepages)" >&2
	exit 1
fi

missing=()
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	say "installing ${missing[*]}"
	apt-get update -q
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
else
	say "apt packages present"
fi

cur=$(cat /proc/sys/vm/nr_hugepages)
if [ "$cur" -lt "$HUGEPAGES" ]; then
	echo "$HUGEPAGES" > /proc/sys/vm/nr_hugepages
	cur=$(cat /proc/sys/vm/nr_hugepages)
	if [ "$cur" -lt "$HUGEPAGES" ]; then
		echo "setup: only $cur of $HUGEPAGES 2 MiB hugepages could be reserved (memory fragmented?)" >&2
		exit 1
	fi
fi
say "hugepages: $cur x 2 MiB reserved, $(cat /sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages) free"
if ! grep -q '^[^ ]* [^ ]* hugetlbfs ' /proc/mounts; then
	mkdir -p /dev/hugepages
	mount -t hugetlbfs nodev /dev/hugepages
	say "mounted hugetlbfs on /dev/hugepages"
fi

if [ ! -f gen/build/build.ninja ]; then
	meson setup gen/build gen --buildtype=release
fi
ninja -C gen/build

# root runs the entry points in /usr/local/bin: only link them to a checkout no other user can change
if unsafe=$(python3 scripts/safe_path.py "$PWD"); then
	link=1
else
	link=0
	for f in zeroloss zlgen; do  # links made from here before point into a tree others can change
		case "$(readlink /usr/local/bin/$f 2>/dev/null || true)" in "$PWD"/*) rm -f /usr/local/bin/$f ;; esac
	done
fi
if [ "$link" = 1 ]; then
	ln -sf "$PWD/gen/build/zlgen" /usr/local/bin/zlgen
	say "zlgen built: $(readlink -f /usr/local/bin/zlgen)"
else
	say "zlgen built: $PWD/gen/build/zlgen"
fi

# the VNF guest for --vnf vm, from Debian packages (rebuilt only when its inputs change)
./scripts/build-guest.sh
# the CNF's image for --vnf container, from the host's DPDK (rebuilt only when its inputs change)
./scripts/build-cnf-image.sh

if [ ! -x .venv/bin/python ]; then
	python3 -m venv .venv
fi
stamp=.venv/.zeroloss-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
	.venv/bin/pip install -q --upgrade pip
	.venv/bin/pip install -q -e '.[test,docs]'
	touch "$stamp"
fi
if [ "$link" = 1 ]; then
	ln -sf "$PWD/.venv/bin/zeroloss" /usr/local/bin/zeroloss
	say "zeroloss installed: $(command -v zeroloss)"
else
	say "WARNING: not linking /usr/local/bin/zeroloss and zlgen: $unsafe; use $PWD/.venv/bin/zeroloss and the make" \
		"targets, or move the checkout to a folder only root can write (e.g. /opt/zeroloss) and run make setup again"
fi
