#!/usr/bin/env bash
# Runs every native fuzz target in the module for a short time from its
# seed corpus. Usage: scripts/fuzz.sh [duration]; FUZZ_PKGS narrows the
# packages (default ./...).
#
# Every crasher found is kept: the Go fuzzer writes it to the package's
# testdata/fuzz/FuzzName/, where plain `go test` replays it from then on.
# This script prints each new file in full, so that a run on a machine that
# is thrown away afterwards (CI) still shows it in its log, copies it to
# $FUZZ_CRASHERS_DIR when set, and ends with the `git add` to commit it as
# a regression input.
set -euo pipefail
t=${1:-5s}
fails=0
kept=()
keep_new() { # keep_new DIR: report crashers under DIR/testdata/fuzz not in git
	local f
	while IFS= read -r f; do
		[ -n "$f" ] || continue
		kept+=("$f")
		echo "fuzz: new crasher $f:"
		cat "$f"
		if [ -n "${FUZZ_CRASHERS_DIR:-}" ]; then
			mkdir -p "$FUZZ_CRASHERS_DIR"
			cp "$f" "$FUZZ_CRASHERS_DIR/$(echo "$f" | tr / _)"
		fi
	done < <(git ls-files --others --exclude-standard -- "$1/testdata/fuzz" 2>/dev/null)
}
while read -r pkg; do
	dir=$(go list -f '{{.Dir}}' "$pkg")
	rel=${dir#"$(pwd)/"}
	for f in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u); do
		echo "fuzz $pkg $f ($t)"
		for try in 1 2; do
			if go test -run '^$' -fuzz "^$f\$" -fuzztime "$t" "$pkg" >/tmp/fuzz.$$.log 2>&1; then
				break
			fi
			# A found crash is written to testdata/fuzz and always fails.
			# Without one, "context deadline exceeded" is the fuzzing
			# engine's own: its coordinator compares the -fuzztime
			# context's error with its child's before the child has been
			# cancelled, a race that a busy machine loses now and then
			# (an input is not involved). That is retried once; the second
			# time, the target's corpus is replayed without fuzzing, and
			# the target passes if every input in it does.
			if ! grep -q 'Failing input written to' /tmp/fuzz.$$.log &&
				grep -q '^    context deadline exceeded$' /tmp/fuzz.$$.log; then
				if [ "$try" = 1 ]; then
					echo "fuzz $pkg $f: engine deadline without a failing input; retrying once"
					continue
				fi
				if go test -count=1 -run "^$f\$" "$pkg" >>/tmp/fuzz.$$.log 2>&1; then
					echo "fuzz $pkg $f: engine deadline again without a failing input; the corpus replays clean"
					break
				fi
			fi
			cat /tmp/fuzz.$$.log
			keep_new "$rel"
			fails=$((fails + 1))
			break
		done
	done
done < <(go list ${FUZZ_PKGS:-./...})
rm -f /tmp/fuzz.$$.log
if ((${#kept[@]})); then
	echo "fuzz: ${#kept[@]} new crasher(s); commit them as regression inputs once fixed:"
	printf '  git add %q\n' "${kept[@]}"
fi
if ((fails)); then
	echo "fuzz: $fails target(s) failed"
	exit 1
fi
echo "fuzz: all targets passed"
