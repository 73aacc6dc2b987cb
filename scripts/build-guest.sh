#!/usr/bin/env bash
# Builds the VNF guest for `--vnf vm` from Debian packages only: the Debian cloud kernel
# (linux-image-cloud-amd64, fetched with apt-get download, never installed on the host) and an
# initramfs holding busybox (busybox-static), dpdk-testpmd with exactly the libraries and drivers
# it loads (the host's dpdk package), the kernel modules uio_pci_generic and virtio_console with
# their dependencies, guest/init and the telemetry relay guest/agent.c.
#
# Output in guest/build/: vmlinuz, initrd.gz, manifest.json (what went in). Rebuilt only when an
# input changed (package versions, guest/init, guest/agent.c, this script): see the stamp.
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=guest/build
say() { printf 'guest: %s\n' "$*"; }

kpkg=$(apt-cache depends linux-image-cloud-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/{print $2; exit}')
if [ -z "$kpkg" ]; then
	echo "guest: the Debian package linux-image-cloud-amd64 is not known to apt (apt-get update?)" >&2
	exit 1
fi
kver=$(apt-cache policy "$kpkg" | awk '/Candidate:/{print $2}')
ver() { dpkg-query -W -f='${Version}' "$1"; }
stamp_in="kernel=$kpkg=$kver dpdk=$(ver dpdk) busybox=$(ver busybox-static) libc=$(ver libc6)
$(sha256sum guest/init guest/agent.c scripts/build-guest.sh)"
stamp=$(printf '%s' "$stamp_in" | sha256sum | cut -c1-16)
if [ -f "$OUT/stamp" ] && [ "$(cat "$OUT/stamp")" = "$stamp" ] && [ -f "$OUT/vmlinuz" ] && [ -f "$OUT/initrd.gz" ]; then
	say "up to date ($OUT, $kpkg)"
	exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$OUT/debs"
deb=$(ls "$OUT/debs/${kpkg}_"*.deb 2>/dev/null | head -1 || true)
if [ -z "$deb" ] || ! dpkg-deb -f "$deb" Version | grep -qx "$kver"; then
	rm -f "$OUT/debs/"*.deb
	say "downloading $kpkg $kver"
	(cd "$OUT/debs" && apt-get download -q "$kpkg=$kver" 2>&1 | grep -v '^W: Download is performed unsandboxed' || true)
	deb=$(ls "$OUT/debs/${kpkg}_"*.deb)
fi
dpkg-deb -x "$deb" "$work/kernel"
kernel_release=$(ls "$work/kernel/lib/modules")
mods="$work/kernel/lib/modules/$kernel_release"

root="$work/root"
mkdir -p "$root"/{bin,usr/bin,etc,proc,sys,dev,lib/modules,var/run,tmp}
cp /bin/busybox "$root/bin/busybox"
install -m 0755 guest/init "$root/init"
gcc -O2 -Wall -Wextra -Werror -o "$root/usr/bin/zl-guest-agent" guest/agent.c

# kernel modules in load order: each one's dependencies (modinfo depends) before it
order=()
add_module() {
	local name=$1 file dep
	file=$(find "$mods" -name "$name.ko" -o -name "${name//_/-}.ko" | head -1)
	[ -n "$file" ] || return 0   # built into the kernel
	for dep in $(modinfo -F depends "$file" | tr ',' ' '); do add_module "$dep"; done
	local rel=${file#"$mods"/}
	for o in "${order[@]:-}"; do [ "$o" = "$rel" ] && return 0; done
	order+=("$rel")
	mkdir -p "$root/lib/modules/$(dirname "$rel")"
	cp "$file" "$root/lib/modules/$rel"
}
for m in uio_pci_generic virtio_pci virtio_console; do add_module "$m"; done
printf '%s\n' "${order[@]}" > "$root/etc/zl-modules"

# dpdk-testpmd, the drivers EAL loads from its plugin folder, and every library either needs. The
# folder holds symlinks into the library folder, as on the host: a driver library that testpmd also
# links (bus_pci) must be the same file, or it registers twice and EAL panics
pmds=$(ls -d /usr/lib/x86_64-linux-gnu/dpdk/pmds-* | head -1)
copy_with_libs() {
	local f lib
	for f in "$@"; do
		mkdir -p "$root$(dirname "$f")"
		cp -L "$f" "$root$f"
		for lib in $(ldd "$f" | awk '/=> \//{print $3} /^\t\/lib/{print $1}'); do
			[ -e "$root$lib" ] && continue
			mkdir -p "$root$(dirname "$lib")"
			cp -L "$lib" "$root$lib"
		done
	done
}
copy_with_libs /usr/bin/dpdk-testpmd
# glibc loads libgcc_s at run time (pthread_cancel, unwinding): ldd does not list it
copy_with_libs "$(readlink -f /usr/lib/x86_64-linux-gnu/libgcc_s.so.1)"
cp -P /usr/lib/x86_64-linux-gnu/libgcc_s.so.1 "$root/usr/lib/x86_64-linux-gnu/" 2>/dev/null || true
mkdir -p "$root$pmds"
drivers=()
for d in bus_pci net_virtio mempool_ring; do
	for link in "$pmds/librte_$d.so"*; do
		real=$(readlink -f "$link")
		[ -e "$root$real" ] || copy_with_libs "$real"
		if [ -L "$link" ]; then
			cp -P "$link" "$root$link"
		fi
	done
	drivers+=("librte_$d")
done
printf '%s\n' "${drivers[@]}" > "$root/etc/zl-drivers"

(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) > "$work/initrd.gz"
cp "$(ls "$work/kernel/boot/vmlinuz-"*)" "$work/vmlinuz"
mv "$work/vmlinuz" "$work/initrd.gz" "$OUT/"
cat > "$OUT/manifest.json" <<JSON
{"kernel_package": "$kpkg", "kernel_version": "$kver", "kernel_release": "$kernel_release",
 "dpdk": "$(ver dpdk)", "busybox": "$(ver busybox-static)", "modules": "$(tr '\n' ' ' < "$root/etc/zl-modules")",
 "drivers": "$(tr '\n' ' ' < "$root/etc/zl-drivers")", "initrd_bytes": $(stat -c %s "$OUT/initrd.gz"), "stamp": "$stamp"}
JSON
echo "$stamp" > "$OUT/stamp"
say "built $OUT/vmlinuz ($kernel_release) and $OUT/initrd.gz ($(du -h "$OUT/initrd.gz" | cut -f1))"
