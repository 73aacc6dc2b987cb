#!/usr/bin/env bash
# The CNF's container image (--vnf container), built locally from the host's own packages: no registry pull.
# A rootfs holding dpdk-testpmd with exactly the libraries and drivers it loads for vhost-user (virtio_user) and
# memif ports, busybox for a shell, and python3 with DPDK's dpdk-telemetry.py (what a lab's CNF image has, and
# what `kubectl exec` runs in it); imported into podman's store as localhost/zeroloss-testpmd:<dpdk version>.
# Rebuilt only when its inputs change (the image carries them in its label org.zeroloss.stamp).
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'build-cnf-image: %s\n' "$*"; }
ver() { dpkg-query -W -f='${Version}' "$1"; }

dpdk_ver=$(ver dpdk)
IMAGE="localhost/zeroloss-testpmd:${dpdk_ver//[^A-Za-z0-9_.-]/_}"
stamp="dpdk=$dpdk_ver busybox=$(ver busybox-static) libc=$(ver libc6) python=$(ver python3-minimal) script=$(sha1sum "$0" | cut -c1-12)"
if [ "$(podman image inspect --format '{{index .Labels "org.zeroloss.stamp"}}' "$IMAGE" 2>/dev/null || true)" = "$stamp" ]; then
	say "$IMAGE is up to date"
	exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root=$work/root
mkdir -p "$root"/{bin,usr/bin,etc,proc,sys,dev,tmp,var/run/dpdk,dev/hugepages}

copy_with_libs() {
	local f lib
	for f in "$@"; do
		mkdir -p "$root$(dirname "$f")"
		[ -e "$root$f" ] || cp -L "$f" "$root$f"
		for lib in $(ldd "$f" 2>/dev/null | awk '/=> \//{print $3} /^\t\/lib/{print $1}'); do
			[ -e "$root$lib" ] && continue
			mkdir -p "$root$(dirname "$lib")"
			cp -L "$lib" "$root$lib"
		done
	done
}

cp /bin/busybox "$root/bin/busybox"
for a in sh cat ls sleep kill ps; do ln -s busybox "$root/bin/$a"; done
copy_with_libs /usr/bin/dpdk-testpmd
# glibc loads libgcc_s at run time (pthread_cancel, unwinding): ldd does not list it
copy_with_libs "$(readlink -f /usr/lib/x86_64-linux-gnu/libgcc_s.so.1)"
cp -P /usr/lib/x86_64-linux-gnu/libgcc_s.so.1 "$root/usr/lib/x86_64-linux-gnu/" 2>/dev/null || true
# the drivers EAL loads from its plugin folder: symlinks into the library folder, as on the host (a driver
# that testpmd also links must be the same file, or it registers twice and EAL panics)
pmds=$(ls -d /usr/lib/x86_64-linux-gnu/dpdk/pmds-* | head -1)
mkdir -p "$root$pmds"
for d in bus_vdev net_virtio net_memif mempool_ring; do
	for link in "$pmds/librte_$d.so"*; do
		real=$(readlink -f "$link")
		[ -e "$root$real" ] || copy_with_libs "$real"
		[ -L "$link" ] && cp -P "$link" "$root$link"
	done
done
# python3 and its standard library, for dpdk-telemetry.py and zeroloss's lab reader
py=$(readlink -f /usr/bin/python3)
copy_with_libs "$py"
ln -sf "$(basename "$py")" "$root/usr/bin/python3"
pylib=/usr/lib/$(basename "$py")
mkdir -p "$root$pylib"
(cd "$pylib" && tar -c --exclude=__pycache__ --exclude=test --exclude=idlelib --exclude=tkinter --exclude=ensurepip \
	--exclude=lib2to3 --exclude=site-packages --exclude=dist-packages .) | tar -x -C "$root$pylib"
for so in "$root$pylib"/lib-dynload/*.so; do copy_with_libs "${so#"$root"}"; done
copy_with_libs /usr/bin/dpdk-telemetry.py
echo 'root:x:0:0:root:/root:/bin/sh' > "$root/etc/passwd"

say "importing $IMAGE ($(du -sh "$root" | cut -f1) rootfs)"
tar -C "$root" -c . | podman import --quiet \
	--change "LABEL org.zeroloss.stamp=\"$stamp\"" \
	--change 'CMD ["/usr/bin/dpdk-testpmd", "--help"]' \
	- "$IMAGE" > /dev/null
say "built $IMAGE"
