#!/bin/bash
# build-guest.sh: build the kernel-VM guest (Debian bookworm kernel + an
# initramfs holding busybox, bash, coreutils, kmod, iproute2/rdma, rdma-core
# with the rxe provider, nfs-common, nfs-kernel-server and rpcbind).
#
# Everything comes from `apt-get download` + `dpkg-deb -x`; nothing is
# installed on the host. Downloaded .debs and the built guest are cached in
# $GONFSRDMA_KERNEL_CACHE (default $HOME/.cache/gonfsrdma-kernel). The guest is
# keyed by a hash of the resolved package files (name_version_arch.deb), of
# packages.txt, of guest/init and of this script: changing any of them builds
# a new guest.
#
# Output (stdout, last line): the guest directory, holding vmlinuz,
# initramfs.cpio.gz, kernel-version and manifest.txt.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE=${GONFSRDMA_KERNEL_CACHE:-$HOME/.cache/gonfsrdma-kernel}
DEBS=$CACHE/debs
DL_TIMEOUT=${GONFSRDMA_KERNEL_DL_TIMEOUT:-600}

log() { printf '[build-guest] %s\n' "$*" >&2; }
die() { printf '[build-guest] ERROR: %s\n' "$*" >&2; exit 1; }

for tool in apt-get apt-cache dpkg-deb sha256sum gzip timeout; do
	command -v "$tool" >/dev/null || die "host tool '$tool' not found (need a Debian bookworm host)"
done
mkdir -p "$DEBS" || die "cannot create cache dir $DEBS"

# --- 1. resolve the package set (local apt lists only) ---------------------
if ! apt-cache show linux-image-amd64 >/dev/null 2>&1; then
	log "apt lists empty: running apt-get update"
	timeout 300 apt-get update -q >&2 || die "apt-get update failed"
fi
KPKG=$(apt-cache depends linux-image-amd64 | awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ { print $2; exit }')
[[ -n $KPKG ]] || die "cannot resolve the kernel package from linux-image-amd64"
KVER=${KPKG#linux-image-}

mapfile -t PKGS < <(sed -e 's/#.*//' -e 's/[[:space:]]//g' "$HERE/packages.txt" | grep .)
PKGS+=("$KPKG")

URIS=$(apt-get download --print-uris "${PKGS[@]}" 2>/dev/null) ||
	die "apt-get download --print-uris failed for: ${PKGS[*]} (try apt-get update)"
[[ $(wc -l <<<"$URIS") -eq ${#PKGS[@]} ]] ||
	die "resolved $(wc -l <<<"$URIS") of ${#PKGS[@]} packages; check packages.txt names"

# --- 2. download what is missing --------------------------------------------
missing=()
while read -r _uri file _size hash; do
	if [[ ! -s $DEBS/$file ]]; then
		missing+=("$file")
	fi
done <<<"$URIS"
if ((${#missing[@]})); then
	log "downloading ${#missing[@]} package(s) into $DEBS"
	names=()
	for f in "${missing[@]}"; do names+=("${f%%_*}"); done
	(cd "$DEBS" && timeout "$DL_TIMEOUT" apt-get download -q -o APT::Sandbox::User=root "${names[@]}") >"$CACHE/download.log" 2>&1 ||
		die "apt-get download failed or took over ${DL_TIMEOUT}s: $(tail -n 3 "$CACHE/download.log" | tr '\n' ' ')"
	log "$(grep -E '^Fetched' "$CACHE/download.log" || echo 'downloaded')"
fi
while read -r _uri file _size hash; do
	[[ -s $DEBS/$file ]] || die "package file $file missing after download"
	if [[ $hash == SHA256:* ]] && [[ ! -e $DEBS/$file.ok ]]; then
		got=$(sha256sum "$DEBS/$file" | cut -d' ' -f1)
		if [[ $got != "${hash#SHA256:}" ]]; then
			rm -f "$DEBS/$file"
			die "checksum mismatch for $file (deleted; run again)"
		fi
		: >"$DEBS/$file.ok"
	fi
done <<<"$URIS"

# --- 3. cache key ------------------------------------------------------------
KEY=$({
	awk '{ print $2, $4 }' <<<"$URIS" | sort
	cat "$HERE/packages.txt" "$HERE/guest/init" "${BASH_SOURCE[0]}"
} | sha256sum | cut -c1-16)
OUT=$CACHE/guest-$KEY
if [[ -s $OUT/initramfs.cpio.gz && -s $OUT/vmlinuz && -e $OUT/complete ]]; then
	log "cached guest $OUT"
	echo "$OUT"
	exit 0
fi

# --- 4. unpack -----------------------------------------------------------------
log "building guest $KEY (kernel $KVER)"
WORK=$CACHE/work.$$
trap 'rm -rf "$WORK"' EXIT
rm -rf "$WORK"
ROOT=$WORK/root
KROOT=$WORK/kernel
mkdir -p "$ROOT" "$KROOT"
while read -r _uri file _rest; do
	if [[ $file == "$KPKG"_* ]]; then
		dpkg-deb -x "$DEBS/$file" "$KROOT" || die "dpkg-deb -x $file failed"
	else
		dpkg-deb -x "$DEBS/$file" "$ROOT" || die "dpkg-deb -x $file failed"
	fi
done <<<"$URIS"
[[ -s $KROOT/boot/vmlinuz-$KVER ]] || die "no /boot/vmlinuz-$KVER in $KPKG"

LIBDIRS=$ROOT/lib/x86_64-linux-gnu:$ROOT/usr/lib/x86_64-linux-gnu
LDSO=$ROOT/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2
[[ -x $LDSO ]] || LDSO=$ROOT/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2
[[ -x $LDSO ]] || die "no dynamic loader in libc6"
# run a guest binary on the host through the guest's own loader and libraries
guestrun() { local argv0=$1; shift; "$LDSO" --library-path "$LIBDIRS" --argv0 "$argv0" "$@"; }

# --- 5. kernel modules: closure of what the tests load ----------------------
MODULES=(virtio_pci virtio_net 9p 9pnet_virtio dummy crc32_generic crc32_pclmul rdma_rxe sch_netem
	ib_uverbs rdma_ucm nfs nfsv3 nfsv4 rpcrdma nfsd)
guestrun depmod "$ROOT/bin/kmod" -b "$KROOT" "$KVER" || die "depmod over the kernel package failed"
modfiles=$(for m in "${MODULES[@]}"; do
	guestrun modprobe "$ROOT/bin/kmod" -d "$KROOT" -S "$KVER" --show-depends "$m" ||
		die "module $m not found in $KPKG"
done | awk '$1 == "insmod" { print $2 }' | sort -u)
nmod=0
for f in $modfiles; do
	rel=${f#"$KROOT"/}
	mkdir -p "$ROOT/$(dirname "$rel")"
	cp "$f" "$ROOT/$rel"
	nmod=$((nmod + 1))
done
for f in modules.order modules.builtin modules.builtin.modinfo; do
	[[ -e $KROOT/lib/modules/$KVER/$f ]] && cp "$KROOT/lib/modules/$KVER/$f" "$ROOT/lib/modules/$KVER/"
done
guestrun depmod "$ROOT/bin/kmod" -b "$ROOT" "$KVER" || die "depmod over the guest modules failed"
log "$nmod module files"

# --- 6. trim, configure ---------------------------------------------------------
rm -rf "$ROOT"/usr/share/{doc,man,info,locale,lintian,bug,zsh,bash-completion} \
	"$ROOT"/usr/lib/x86_64-linux-gnu/gconv "$ROOT"/lib/systemd "$ROOT"/usr/lib/systemd \
	"$ROOT"/etc/init.d "$ROOT"/boot
mkdir -p "$ROOT"/{proc,sys,dev,tmp,run,share,mnt,export,root,var/lib/nfs/rpc_pipefs,var/lib/nfs/v4recovery,var/lib/nfs/sm,var/lib/nfs/sm.bak,var/run,etc/exports.d,lib64}
# absolute symlinks in the packages point at host paths while we build; the
# loader symlink must exist in the guest
ln -sf /lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 "$ROOT/lib64/ld-linux-x86-64.so.2"
cat >"$ROOT/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/bin/bash
daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin
_rpc:x:100:65534::/run/rpcbind:/usr/sbin/nologin
statd:x:101:65534::/var/lib/nfs:/usr/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
EOF
cat >"$ROOT/etc/group" <<'EOF'
root:x:0:
daemon:x:1:
nogroup:x:65534:
EOF
printf 'passwd: files\ngroup: files\nshadow: files\nhosts: files\nservices: files\nprotocols: files\nrpc: files\nnetgroup: files\n' >"$ROOT/etc/nsswitch.conf"
# the two hosts of the lab (guest/init sets the host name from the share)
printf '127.0.0.1 localhost\n10.99.0.1 server\n10.99.0.2 client\n' >"$ROOT/etc/hosts"
echo guest >"$ROOT/etc/hostname"
: >"$ROOT/etc/exports"
: >"$ROOT/etc/fstab"
ln -sf /proc/mounts "$ROOT/etc/mtab"
mkdir -p "$ROOT/etc/ld.so.conf.d"
printf '/lib/x86_64-linux-gnu\n/usr/lib/x86_64-linux-gnu\n' >"$ROOT/etc/ld.so.conf.d/x86_64-linux-gnu.conf"
echo 'include /etc/ld.so.conf.d/*.conf' >"$ROOT/etc/ld.so.conf"
LDCONFIG=$(command -v ldconfig || echo /sbin/ldconfig)
"$LDCONFIG" -r "$ROOT" 2>/dev/null || log "warning: ldconfig -r failed (the guest loader falls back to its default paths)"
# busybox applets for what the packages above do not provide (never
# overwrite a real binary)
BB=$ROOT/bin/busybox
[[ -x $BB ]] || die "busybox-static did not provide /bin/busybox"
exists() { [[ -e $1 || -L $1 ]]; }
exists "$ROOT/bin/sh" || ln -s bash "$ROOT/bin/sh"
for a in $("$BB" --list); do
	[[ $a == busybox ]] && continue
	if ! exists "$ROOT/bin/$a" && ! exists "$ROOT/sbin/$a" && ! exists "$ROOT/usr/bin/$a" && ! exists "$ROOT/usr/sbin/$a"; then
		ln -s /bin/busybox "$ROOT/bin/$a"
	fi
done
install -m 0755 "$HERE/guest/init" "$ROOT/init"

# --- 7. every ELF must find its libraries -------------------------------------
log "checking shared-library closure"
bad=0
while IFS= read -r -d '' f; do
	head -c4 "$f" 2>/dev/null | grep -q $'\x7fELF' || continue
	case $f in *.ko) continue ;; esac
	# --list loads (never runs) the object with the guest's loader and
	# libraries; it stops at the first library it cannot open
	out=$("$LDSO" --library-path "$LIBDIRS" --list "$f" 2>&1) && continue
	grep -Eq 'not a dynamic executable|statically linked' <<<"$out" && continue
	if grep -Eq 'cannot open shared object|not found' <<<"$out"; then
		log "missing library for ${f#"$ROOT"}: $(grep -Eo '[^ :]+\.so[^ :]*: cannot open|[^ ]+ => not found' <<<"$out" | head -3 | tr '\n' ' ')"
		bad=1
	fi
done < <(find "$ROOT"/bin "$ROOT"/sbin "$ROOT"/usr/bin "$ROOT"/usr/sbin "$ROOT"/lib/x86_64-linux-gnu "$ROOT"/usr/lib/x86_64-linux-gnu \
	-type f -print0 2>/dev/null)
((bad == 0)) || die "add the packages owning the missing libraries to packages.txt"
[[ -e $ROOT/usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so ]] || die "rxe provider (librxe-rdmav34.so) missing"
[[ -e $ROOT/etc/libibverbs.d/rxe.driver ]] || die "/etc/libibverbs.d/rxe.driver missing"
for b in /bin/bash /sbin/modprobe /sbin/mount.nfs /usr/sbin/exportfs /usr/sbin/rpc.mountd /usr/sbin/rpc.nfsd \
	/sbin/rpcbind /sbin/rpc.statd /sbin/sm-notify /sbin/tc /bin/ip /usr/bin/rdma /bin/dd /usr/bin/stat /usr/bin/sha256sum /bin/tar /usr/bin/diff /usr/bin/find; do
	[[ -e $ROOT$b || -L $ROOT$b ]] || die "guest lacks $b"
done

# --- 8. initramfs --------------------------------------------------------------
mkdir -p "$OUT.tmp"
cp "$KROOT/boot/vmlinuz-$KVER" "$OUT.tmp/vmlinuz"
echo "$KVER" >"$OUT.tmp/kernel-version"
awk '{ print $2 }' <<<"$URIS" | sort >"$OUT.tmp/manifest.txt"
(cd "$ROOT" && find . -mindepth 1 | LC_ALL=C sort | "$BB" cpio -o -H newc 2>/dev/null) | gzip -1 >"$OUT.tmp/initramfs.cpio.gz" ||
	die "cpio/gzip of the initramfs failed"
: >"$OUT.tmp/complete"
rm -rf "$OUT"
mv "$OUT.tmp" "$OUT"
# keep only the newest three guests
ls -1dt "$CACHE"/guest-* 2>/dev/null | tail -n +4 | xargs -r rm -rf
log "guest ready: $OUT ($(du -sh "$OUT/initramfs.cpio.gz" | cut -f1) initramfs)"
echo "$OUT"
