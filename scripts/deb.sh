#!/usr/bin/env bash
# deb.sh: builds build/deb/gonfsrdma.deb (also kept as
# gonfsrdma_VERSION_ARCH.deb) from bin/gonfsrdma (make build): `make
# install` into a staging tree, Depends computed by dpkg-shlibdeps from
# the binary's shared libraries, then nfpm, run as a Go tool pinned by
# tools/nfpm/go.mod (built from the Go module proxy, cached by go).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
GO=${GO:-go}
out=$repo/build/deb
stage=$out/stage
rm -rf "$out"
mkdir -p "$out"
make --no-print-directory install DESTDIR="$stage" PREFIX=/usr UNITDIR=/lib/systemd/system SYSCONFDIR=/etc >/dev/null

# Debian versions start with a digit: v1.2.3 tags give 1.2.3 (1.2.3+4+gSHA
# past a tag), an untagged tree 0~gitDATE.SHA; +dirty for local changes.
if v=$(git describe --tags --match 'v[0-9]*' 2>/dev/null); then
	version=${v#v}
	version=${version//-/+}
else
	version="0~git$(git log -1 --format=%cd --date=format:%Y%m%d%H%M%S).$(git rev-parse --short=12 HEAD)"
fi
git diff --quiet HEAD -- 2>/dev/null || version="$version+dirty"
arch=$(dpkg --print-architecture)

# dpkg-shlibdeps wants a debian/control beside the binary it reads.
shl=$(mktemp -d)
trap 'rm -rf "$shl"' EXIT
mkdir "$shl/debian"
printf 'Source: gonfsrdma\n\nPackage: gonfsrdma\nArchitecture: any\n' >"$shl/debian/control"
cp "$stage/usr/bin/gonfsrdma" "$shl/gonfsrdma"
deps=$(cd "$shl" && dpkg-shlibdeps -O gonfsrdma 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
[[ -n $deps ]] || { echo "deb: dpkg-shlibdeps found no dependencies for bin/gonfsrdma" >&2; exit 1; }
deplines=$(tr ',' '\n' <<<"$deps" | sed -e 's/^ *//' -e 's/^/  - /')

# The config with the values filled in and absolute paths, so nfpm can
# run from tools/nfpm.
awk -v deps="$deplines" -v stage="$stage" -v arch="$arch" -v version="$version" -v repo="$repo" '
	/# @SHLIBS_DEPENDS@/ { print deps; next }
	{ gsub(/\$\{STAGE\}/, stage); gsub(/\$\{DEB_ARCH\}/, arch); gsub(/\$\{DEB_VERSION\}/, version)
	  gsub(/packaging\/deb\//, repo "/packaging/deb/"); print }' packaging/nfpm.yaml >"$out/nfpm.yaml"
(cd tools/nfpm && $GO tool nfpm package --config "$out/nfpm.yaml" --packager deb --target "$out/gonfsrdma.deb" >/dev/null)
cp "$out/gonfsrdma.deb" "$out/gonfsrdma_${version}_${arch}.deb"
echo "deb: $out/gonfsrdma_${version}_${arch}.deb (Depends: init-system-helpers (>= 1.54~), $deps)"
