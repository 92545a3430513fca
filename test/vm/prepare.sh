#!/bin/bash
# Prepares what the cgroup v2 VM test (test/vm) boots: a stock Debian
# kernel (vmlinuz) and the few modules the guest loads itself: virtio-pci
# and 9p for its root file system, overlay, loop and ext4 for airlock's
# sandboxes, zram for a swap device. Nothing is installed as the host's
# kernel: the package is only unpacked into the cache, and only the needed
# files are kept (plus the .deb, so a changed module list needs no network).
#
# Cache layout (AIRLOCK_VM_CACHE, default /var/cache/airlock-vm):
#   current                      -> kernel-<version> (symlink)
#   kernel-<version>/vmlinuz
#   kernel-<version>/modules/*.ko
#   kernel-<version>/modules.order   one .ko basename a line, in load order
#   kernel-<version>/modules.wanted  the module list it was made for
#   kernel-<version>/package         the Debian package it came from
#   debs/<package>_<version>_amd64.deb
#
# Needs: apt-get (Debian's archive), dpkg-deb, depmod and modprobe (kmod).
# Safe to run again: with the kernel cached for this module list it does
# nothing (and needs no network), so a later security update of the kernel
# does not force a download; remove the cache dir to move to the newest.
set -euo pipefail

cache="${AIRLOCK_VM_CACHE:-/var/cache/airlock-vm}"
# The modules to load, by name; modprobe adds their dependencies, in order.
# crc32c-intel is optional (it needs SSE4.2): the guest tolerates its failure.
mods=(virtio_pci 9pnet_virtio 9p overlay loop crc32c_generic crc32c-intel ext4 zram)
wanted="${mods[*]}"

if [ -f "$cache/current/vmlinuz" ] && [ "$(cat "$cache/current/modules.wanted" 2>/dev/null)" = "$wanted" ]; then
	exit 0
fi
for tool in apt-get apt-cache dpkg-deb depmod modprobe; do
	command -v "$tool" >/dev/null || { echo "prepare-vm: $tool not found (apt-get install kmod)" >&2; exit 1; }
done

mkdir -p "$cache/debs"
# Keep the kernel we have, if any; else the one linux-image-amd64 names.
pkg="$(cat "$cache/current/package" 2>/dev/null || true)"
deb=""
if [ -n "$pkg" ]; then
	deb="$(ls "$cache/debs/${pkg}"_*.deb 2>/dev/null | head -n1 || true)"
fi
if [ -z "$deb" ]; then
	resolve() { apt-cache depends linux-image-amd64 2>/dev/null | sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*-amd64\)$/\1/p' | head -n1; }
	pkg="$(resolve)"
	if [ -z "$pkg" ]; then
		apt-get update -qq
		pkg="$(resolve)"
	fi
	[ -n "$pkg" ] || { echo "prepare-vm: cannot resolve linux-image-amd64 to a versioned kernel package" >&2; exit 1; }
	echo "prepare-vm: fetching $pkg"
	dl="$(mktemp -d "$cache/debs/dl.XXXXXX")"
	chmod 755 "$dl" # apt's download sandbox user must be able to write here
	(cd "$dl" && apt-get download -qq "$pkg" 2>&1 | grep -v '^W: Download is performed unsandboxed' || true)
	f="$(ls "$dl/${pkg}"_*.deb 2>/dev/null | head -n1 || true)"
	[ -n "$f" ] || { rm -rf "$dl"; echo "prepare-vm: apt-get download $pkg failed" >&2; exit 1; }
	deb="$cache/debs/$(basename "$f")"
	mv "$f" "$deb"
	rm -rf "$dl"
fi
kver="${pkg#linux-image-}"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
dpkg-deb -x "$deb" "$tmp/root"
depmod -b "$tmp/root" "$kver"

out="$cache/kernel-$kver"
rm -rf "$out.new"
mkdir -p "$out.new/modules"
cp "$tmp/root/boot/vmlinuz-$kver" "$out.new/vmlinuz"
: >"$out.new/modules.order"
for m in "${mods[@]}"; do
	# "insmod /path/x.ko" lines, dependencies first; "builtin x" for built-ins.
	modprobe -d "$tmp/root" -S "$kver" --show-depends "$m" >"$tmp/deps"
	while read -r kind path _; do
		[ "$kind" = insmod ] || continue
		base="$(basename "$path")"
		grep -qxF "$base" "$out.new/modules.order" && continue
		cp "$path" "$out.new/modules/$base"
		echo "$base" >>"$out.new/modules.order"
	done <"$tmp/deps"
done
echo "$pkg" >"$out.new/package"
echo "$wanted" >"$out.new/modules.wanted"
rm -rf "$out"
mv "$out.new" "$out"
ln -sfn "kernel-$kver" "$cache/current"
# other kernels' leftovers
for d in "$cache"/kernel-*; do
	[ "$d" = "$out" ] || rm -rf "$d"
done
for f in "$cache"/debs/*.deb; do
	[ "$(basename "$f")" = "$(basename "$deb")" ] || rm -f "$f"
done
echo "prepare-vm: kernel $kver ready in $out ($(wc -l <"$out/modules.order") modules)"
