#!/usr/bin/env bash
# Runs every native fuzz target in the module for a short time from its
# seed corpus. Usage: scripts/fuzz.sh [duration]
set -euo pipefail
t=${1:-5s}
fails=0
while read -r pkg; do
	dir=$(go list -f '{{.Dir}}' "$pkg")
	for f in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u); do
		echo "fuzz $pkg $f ($t)"
		if ! go test -run '^$' -fuzz "^$f\$" -fuzztime "$t" "$pkg" >/tmp/fuzz.$$.log 2>&1; then
			cat /tmp/fuzz.$$.log
			fails=$((fails + 1))
		fi
	done
done < <(go list ./...)
rm -f /tmp/fuzz.$$.log
if ((fails)); then
	echo "fuzz: $fails target(s) failed"
	exit 1
fi
echo "fuzz: all targets passed"
