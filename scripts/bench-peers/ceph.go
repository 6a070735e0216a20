package main

import (
	"fmt"
	"os"
	"strings"
)

// cephSummary prints the CephFS table of scripts/bench-ceph.sh (which
// bench-peers.sh runs after its own servers): gonfsrdma with
// backend=cephfs against NFS-Ganesha's FSAL_CEPH, both exporting a
// directory of the same throwaway CephFS, and the target for it.
// dir holds gonfsrdma.REP.json and ganesha.REP.json; it exits 1 when either
// server has no result.
func cephSummary(dir string) {
	servers := []string{"gonfsrdma", "ganesha"}
	res := load(dir, servers)
	for _, s := range servers {
		if res.reps[s] == 0 {
			fmt.Printf("CephFS: no results of %s in %s\n", s, dir)
			os.Exit(1)
		}
	}
	fmt.Println("CephFS: gonfsrdma (backend=cephfs) vs NFS-Ganesha FSAL_CEPH (\"ganesha\"), each exporting its own directory of one CephFS, repetitions alternating.")
	res.printTable(servers)
	worse := res.belowIn("ganesha")
	fmt.Println()
	if len(worse) == 0 {
		fmt.Println("Target: gonfsrdma >= Ganesha FSAL_CEPH in every row: met")
		return
	}
	fmt.Printf("Target: gonfsrdma >= Ganesha FSAL_CEPH in every row: NOT met (below in: %s)\n", strings.Join(worse, ", "))
}
