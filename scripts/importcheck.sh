#!/usr/bin/env bash
# Checks the forbidden import directions of docs/architecture.md
# ("Packages") on the module's real import graph: every package's
# transitive imports (go list's Deps, build tags of the default build and
# of -tags "$IMPORTCHECK_TAGS" when set) must avoid the packages its layer
# may not know. Run by `make lint`.
#
# A rule names package paths relative to the module; "P" covers P and
# every package below it, "=P" P alone. Each side of every rule must name
# at least one package that exists, so that a rename cannot turn a rule
# into a no-op.
set -euo pipefail
mod=$(go list -m)
# from : forbidden ...
rules=(
	"nfs: rpcrdma verbs"                              # NFS never sees a transport
	"oncrpc: nfs rpcrdma verbs nlm nsm"               # the RPC core knows no program and no RDMA
	"verbs: oncrpc rpcrdma nfs nlm nsm xdr"           # verbs knows no RPC
	"vfs: nfs oncrpc rpcrdma nlm nsm exports daemon"  # backends know no NFS
	"rpcrdma/proto: =rpcrdma rpcrdma/client verbs oncrpc" # the protocol knows neither end nor RDMA verbs
	"=rpcrdma: rpcrdma/client"                        # the server transport never the client's
	"rpcrdma/client: nfs daemon =rpcrdma"             # program-neutral; never the server's internals
	"exports: nfs rpcrdma verbs daemon"               # policy knows no protocol engine
	"cmd: verbs/softfabric"                           # no binary links the test fabric
	"daemon: verbs/softfabric"
)
graph=$(go list -f '{{.ImportPath}}{{range .Deps}} {{.}}{{end}}' ${IMPORTCHECK_TAGS:+-tags "$IMPORTCHECK_TAGS"} ./...)
pkgs=$(printf '%s\n' "$graph" | awk '{print $1}')

under() { # under PREFIX PATH: PATH is PREFIX or below it
	[[ $2 == "$1" || $2 == "$1"/* ]]
}
forbids() { # forbids RULE_PATH DEP: "=P" is P alone, "P" P and below
	if [[ $1 == =* ]]; then
		[[ $2 == "$mod/${1#=}" ]]
	else
		under "$mod/$1" "$2"
	fi
}
exists() { # exists RULE_PATH: some package of the module is covered by it
	local p
	while IFS= read -r p; do
		forbids "$1" "$p" && return 0
	done <<<"$pkgs"
	return 1
}

fail=0
check() { # check FROM FORBIDDEN...
	local from=$1
	shift
	local line pkg dep f
	while IFS= read -r line; do
		pkg=${line%% *}
		forbids "$from" "$pkg" || continue
		for dep in ${line#* }; do
			[[ $dep == "$pkg" ]] && continue
			for f in "$@"; do
				if forbids "$f" "$dep"; then
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
	check "$from" "${forbidden[@]}"
	n=$((n + 1))
done
if [[ $fail != 0 ]]; then
	exit 1
fi
echo "importcheck: $n rules hold over $(printf '%s\n' "$pkgs" | wc -l) packages"
