#!/usr/bin/env bash
# deb-check.sh DEB: shows that the Debian package installs, starts and
# goes away cleanly, without touching this machine (root needed):
#
#  1. its control data: name, version, architecture, Depends, conffiles;
#  2. dpkg --root installs it into a fresh root whose dpkg database holds
#     only the packages the Depends name (their stanzas copied from this
#     machine's database: dpkg checks the versions the package asks for
#     against real Debian packages, the files themselves stay this
#     machine's), with maintainer scripts run chrootless (DPKG_ROOT): no
#     warning, every listed file there with its mode, the conffiles
#     registered, the unit enabled (multi-user.target.wants) and
#     /srv/gonfsrdma made;
#  3. apt-get install --simulate resolves the Depends from this machine's
#     package lists (what apt on a fresh Debian machine would install);
#  4. in a private mount namespace where the root is laid over /usr, /etc
#     and /var (overlayfs; writes go to a scratch directory) and its /srv
#     bound over /srv, the unit is
#     checked by systemd-analyze verify, then started from its own
#     directives by scripts/unitrun (ExecStart with EnvironmentFile,
#     StateDirectory, LimitMEMLOCK, NOTIFY_SOCKET) in a private network
#     namespace: READY=1, the installed binary lists and reads the
#     installed export over NFS, ExecReload gives RELOADING=1 and READY=1,
#     SIGTERM gives STOPPING=1 and exit 0; the bash completion script
#     completes against the installed binary;
#  5. dpkg --purge removes every file, the state directory and the
#     enablement.
#
# Not shown: systemd itself starting it (no systemd runs as PID 1 here,
# so Restart=, the journal and systemctl are not exercised; unitrun says
# which directives it did not apply), apt fetching and unpacking the
# dependencies into an empty machine, and RDMA (no device in the
# namespace: the daemon serves TCP and says why there is no RDMA).
set -euo pipefail
deb=$(readlink -f "$1")
repo=$(cd "$(dirname "$0")/.." && pwd)
GO=${GO:-go}
fail() { echo "deb-check: FAIL: $*" >&2; exit 1; }
[[ $(id -u) == 0 ]] || fail "needs root (dpkg --root, namespaces, overlayfs)"
for t in dpkg dpkg-deb dpkg-query systemd-analyze unshare ip apt-get; do
	command -v "$t" >/dev/null || fail "needs $t (make deps)"
done
[[ -r /usr/share/bash-completion/bash_completion ]] || fail "needs bash-completion (make deps)"

work=$(mktemp -d /tmp/deb-check.XXXXXX)
trap 'rm -rf "$work"' EXIT
root=$work/root

echo "== 1. control data"
for f in Package Version Architecture Depends; do
	v=$(dpkg-deb --field "$deb" "$f")
	[[ -n $v ]] || fail "no $f field"
	echo "$f: $v"
done
[[ $(dpkg-deb --field "$deb" Package) == gonfsrdma ]] || fail "package name"
[[ $(dpkg-deb --field "$deb" Architecture) == $(dpkg --print-architecture) ]] || fail "architecture"
dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./conffiles >"$work/conffiles"
diff <(sort "$work/conffiles") <(printf '/etc/default/gonfsrdma\n/etc/gonfsrdma/exports\n') ||
	fail "conffiles are not /etc/default/gonfsrdma and /etc/gonfsrdma/exports"

echo "== 2. dpkg --root into a fresh root"
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates" "$root/var/lib/dpkg/triggers"
: >"$root/var/lib/dpkg/status"
: >"$root/var/lib/dpkg/available"
deps=$(dpkg-deb --field "$deb" Depends | tr ',' '\n' | sed -E 's/^ *//; s/[ (|].*//' | sort -u)
for p in $deps; do
	dpkg-query -s "$p" >>"$root/var/lib/dpkg/status" 2>/dev/null ||
		fail "dependency $p is not installed on this machine, so it cannot stand in for it"
	echo >>"$root/var/lib/dpkg/status"
	: >"$root/var/lib/dpkg/info/$(dpkg-query -W -f '${binary:Package}' "$p").list"
done
echo "dependencies standing in: $(echo $deps)"
dpkg --root="$root" --force-script-chrootless --log="$work/dpkg.log" -i "$deb" >"$work/install.log" 2>&1 ||
	{ cat "$work/install.log"; fail "dpkg -i"; }
cat "$work/install.log"
! grep -Ei 'warning|error' "$work/install.log" || fail "dpkg said the above"
dpkg --root="$root" -s gonfsrdma | grep -qx 'Status: install ok installed' || fail "not 'install ok installed'"
dpkg --root="$root" --audit gonfsrdma >"$work/audit" 2>&1 || true
[[ ! -s $work/audit ]] || { cat "$work/audit"; fail "dpkg --audit"; }
while read -r f; do
	[[ -e $root$f ]] || fail "listed but missing: $f"
done < <(dpkg --root="$root" -L gonfsrdma)
[[ $(stat -c '%a %U' "$root/usr/bin/gonfsrdma") == "755 root" ]] || fail "binary mode"
[[ $(stat -c '%a' "$root/lib/systemd/system/gonfsrdma.service") == 644 ]] || fail "unit mode"
reg=$(dpkg-query --admindir="$root/var/lib/dpkg" -W -f '${Conffiles}\n' gonfsrdma)
grep -q '^ /etc/gonfsrdma/exports [0-9a-f]\{32\}$' <<<"$reg" && grep -q '^ /etc/default/gonfsrdma [0-9a-f]\{32\}$' <<<"$reg" ||
	fail "conffiles not registered: $reg"
[[ $(readlink "$root/etc/systemd/system/multi-user.target.wants/gonfsrdma.service") == /lib/systemd/system/gonfsrdma.service ]] ||
	fail "postinst did not enable the unit"
[[ -d $root/srv/gonfsrdma ]] || fail "postinst did not make /srv/gonfsrdma"
echo "installed: $(dpkg --root="$root" -L gonfsrdma | wc -l) paths, unit enabled, /srv/gonfsrdma made"

echo "== 3. apt-get install --simulate"
apt-get install --simulate -q "$deb" >"$work/apt.log" 2>&1 || { cat "$work/apt.log"; fail "apt cannot resolve the Depends"; }
grep -E '^(Inst|Conf) ' "$work/apt.log" || true
grep -q '^Inst gonfsrdma ' "$work/apt.log" || fail "apt would not install gonfsrdma"

echo "== 4. systemd-analyze verify, then the unit started from its directives"
(cd "$repo" && $GO build -o "$work/unitrun" ./scripts/unitrun)
printf 'hello from the package\n' >"$work/hello"
unshare --mount --net --propagation private bash -euo pipefail -c '
	work=$1 root=$2
	for d in usr etc var; do
		mkdir -p "$work/up-$d" "$work/wk-$d"
		lower=/$d
		[[ -d $root/$d ]] && lower=$root/$d:/$d
		mount -t overlay overlay -o "lowerdir=$lower,upperdir=$work/up-$d,workdir=$work/wk-$d" "/$d"
	done
	# The export needs a filesystem that makes file handles, which
	# overlayfs does not: /srv is a copy of the root'"'"'s, bound.
	cp -a "$root/srv" "$work/srv"
	mount --bind "$work/srv" /srv
	ip link set lo up
	unit=$root/lib/systemd/system/gonfsrdma.service
	systemd-analyze verify "$unit"
	echo "systemd-analyze verify: clean"
	cp "$work/hello" /srv/gonfsrdma/hello
	chmod 644 /srv/gonfsrdma/hello
	"$work/unitrun" "$unit" "
		/usr/bin/gonfsrdma ls -l nfs://127.0.0.1/srv/gonfsrdma &&
		test \"\$(/usr/bin/gonfsrdma cat nfs://127.0.0.1/srv/gonfsrdma/hello)\" = \"hello from the package\""
	# The bash completion script, against the installed binary.
	got=$(bash -c "source /usr/share/bash-completion/bash_completion
		source /usr/share/bash-completion/completions/gonfsrdma
		COMP_WORDS=(gonfsrdma ser); COMP_CWORD=1; COMP_LINE=\"gonfsrdma ser\"; COMP_POINT=\${#COMP_LINE}
		__gonfsrdma_bash_autocomplete; echo \"\${COMPREPLY[*]}\"")
	[[ $got == serve ]] || { echo "bash completion of \"gonfsrdma ser\": \"$got\""; exit 1; }
	echo "bash completion: gonfsrdma ser -> $got"
	[[ -d /var/lib/gonfsrdma && -s /var/lib/gonfsrdma/fhkey ]] || { echo "no state in /var/lib/gonfsrdma"; exit 1; }
	echo "state: $(ls /var/lib/gonfsrdma | tr "\n" " ")(mode $(stat -c %a /var/lib/gonfsrdma))"
' deb-check "$work" "$root" || fail "the unit did not start, reload and stop cleanly (above)"

echo "== 5. dpkg --purge"
mkdir -p "$root/var/lib/gonfsrdma" && : >"$root/var/lib/gonfsrdma/fhkey"
dpkg --root="$root" --force-script-chrootless --log="$work/dpkg.log" --purge gonfsrdma >"$work/purge.log" 2>&1 ||
	{ cat "$work/purge.log"; fail "dpkg --purge"; }
cat "$work/purge.log"
# /etc itself holds the unit's mask between remove and purge; on a real
# machine /etc is never empty, so only this root can draw that warning.
! grep -Ei 'warning|error' "$work/purge.log" | grep -v "directory '/etc' not empty so not removed" || fail "dpkg said the above"
left=$(cd "$root" && find . -path ./var/lib/dpkg -prune -o \( -type f -o -type l \) -print)
[[ -z $left ]] || fail "left after purge: $left"
[[ ! -e $root/var/lib/gonfsrdma ]] || fail "state directory left after purge"
[[ ! -e $root/etc/systemd/system/multi-user.target.wants/gonfsrdma.service ]] || fail "enablement left after purge"
echo "deb-check: PASS"
