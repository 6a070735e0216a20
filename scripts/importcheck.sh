#!/usr/bin/env bash
# Checks the forbidden import directions of docs/architecture.md
# ("Packages") on the module's real import graph: every package's
# transitive imports (go list's Deps, build tags of the default build and
# of -tags "$IMPORTCHECK_TAGS" when set) must avoid the packages its layer
# may not know. Run by `make lint`.
#
# A rule names package paths relative to the module; "P" covers P and
# every package below it. Each side of every rule must name at least one
# package that exists, so that a rename cannot turn a rule into a no-op.
set -euo pipefail
mod=$(go list -m)
# from : forbidden ...
rules=(
	"nfs: rpcrdma verbs"                              # NFS never sees a transport
	"oncrpc: nfs rpcrdma verbs nlm nsm"               # the RPC core knows no program and no RDMA
	"verbs: oncrpc rpcrdma nfs nlm nsm xdr"           # verbs knows no RPC
	"vfs: nfs oncrpc rpcrdma nlm nsm exports daemon"  # backends know no NFS
	"rpcrdma/proto: rpcrdma/client verbs oncrpc"      # the protocol knows neither end nor RDMA verbs
	"rpcrdma/client: nfs daemon"                      # the client transport is program-neutral
	"exports: nfs rpcrdma verbs daemon"               # policy knows no protocol engine
	"cmd: verbs/softfabric"                           # no binary links the test fabric
	"daemon: verbs/softfabric"
)
# The server transport (rpcrdma itself, not below it) must not import
# the client transport: checked on its own, since "rpcrdma" as a "from"
# would also cover rpcrdma/client.
server_rule="rpcrdma/client"

graph=$(go list -f '{{.ImportPath}}{{range .Deps}} {{.}}{{end}}' ${IMPORTCHECK_TAGS:+-tags "$IMPORTCHECK_TAGS"} ./...)
pkgs=$(printf '%s\n' "$graph" | awk '{print $1}')

under() { # under PREFIX PATH: PATH is PREFIX or below it
	[[ $2 == "$1" || $2 == "$1"/* ]]
}
exists() { # exists REL: some package of the module is REL or below it
	local p
	while IFS= read -r p; do
		under "$mod/$1" "$p" && return 0
	done <<<"$pkgs"
	return 1
}

fail=0
check() { # check FROM_PREDICATE_PREFIX EXACT FORBIDDEN...
	local from=$1 exact=$2
	shift 2
	local line pkg dep f
	while IFS= read -r line; do
		pkg=${line%% *}
		if [[ $exact == 1 ]]; then
			[[ $pkg == "$mod/$from" ]] || continue
		else
			under "$mod/$from" "$pkg" || continue
		fi
		for dep in ${line#* }; do
			[[ $dep == "$pkg" ]] && continue
			for f in "$@"; do
				if under "$mod/$f" "$dep"; then
					echo "importcheck: $pkg imports $dep ($from may not import $f)"
					fail=1
				fi
			done
		done
	done <<<"$graph"
}

n=0
for r in "${rules[@]}"; do
	from=${r%%:*}
	read -r -a forbidden <<<"${r#*:}"
	for p in "$from" "${forbidden[@]}"; do
		if ! exists "$p"; then
			echo "importcheck: rule \"$r\" names $p, which is no package of $mod: update the rule"
			fail=1
		fi
	done
	check "$from" 0 "${forbidden[@]}"
	n=$((n + 1))
done
exists rpcrdma || { echo "importcheck: no package rpcrdma"; fail=1; }
check rpcrdma 1 "$server_rule"
n=$((n + 1))
if [[ $fail != 0 ]]; then
	exit 1
fi
echo "importcheck: $n rules hold over $(printf '%s\n' "$pkgs" | wc -l) packages"
