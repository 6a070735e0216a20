package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// metaPhases are the lines of SERVER.REP.meta.tsv written by
// bench-peers-meta.c: phase, ops, seconds, server CPU seconds (-1: not
// read).
var metaPhases = []string{"create", "stat", "unlink"}

// metaTarget is the target for the libnfs program at depth 1:
// gonfsrdma's rate at least this times NFS-Ganesha's, in every phase.
const metaTarget = 1.2

// metaTable prints, per server, the median rate and server CPU per
// operation of each phase of the libnfs metadata program over the
// repetitions, the ratio to gonfsrdma, and gonfsrdma's ratio to Ganesha
// against the target. It prints nothing when no server has results, and
// returns false when a results file is malformed.
func metaTable(dir string, servers []string) bool {
	rate := map[string]map[string][]float64{}
	cpu := map[string]map[string][]float64{}
	n := map[string]int{}
	for _, srv := range servers {
		rate[srv], cpu[srv] = map[string][]float64{}, map[string][]float64{}
		files, _ := filepath.Glob(filepath.Join(dir, srv+".*.meta.tsv"))
		for _, f := range files {
			fh, err := os.Open(f)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return false
			}
			sc := bufio.NewScanner(fh)
			for sc.Scan() {
				fields := strings.Split(sc.Text(), "\t")
				if len(fields) != 4 {
					fmt.Fprintf(os.Stderr, "%s: malformed line %q\n", f, sc.Text())
					fh.Close()
					return false
				}
				var v [3]float64
				for i := range v {
					if v[i], err = strconv.ParseFloat(fields[i+1], 64); err != nil {
						fmt.Fprintf(os.Stderr, "%s: %v\n", f, err)
						fh.Close()
						return false
					}
				}
				ops, secs, cpuSecs := v[0], v[1], v[2]
				if ops <= 0 || secs <= 0 {
					fmt.Fprintf(os.Stderr, "%s: no operations timed in %q\n", f, sc.Text())
					fh.Close()
					return false
				}
				rate[srv][fields[0]] = append(rate[srv][fields[0]], ops/secs)
				if cpuSecs >= 0 {
					cpu[srv][fields[0]] = append(cpu[srv][fields[0]], cpuSecs*1e6/ops)
				}
			}
			fh.Close()
			n[srv]++
		}
	}
	if n["gonfsrdma"] == 0 && n["ganesha"] == 0 && n["go-nfs"] == 0 {
		return true
	}
	fmt.Println()
	fmt.Println("libnfs metadata program (bench-peers-meta.c: synchronous libnfs, one call at a time, each op by path from the export root = LOOKUPs + the call); medians, (x.xx) = ratio to gonfsrdma:")
	printTableHead(22, servers, n)
	line := func(label string, vals map[string]map[string][]float64, ph, format string) {
		fmt.Printf("| %-22s |", label)
		base := median(vals["gonfsrdma"][ph])
		for _, s := range servers {
			m := median(vals[s][ph])
			cell := "n/a"
			if m >= 0 {
				cell = fmt.Sprintf(format, m)
				if s != "gonfsrdma" && base > 0 && m > 0 {
					cell += fmt.Sprintf(" (%.2f)", m/base)
				}
			}
			fmt.Printf(" %18s |", cell)
		}
		fmt.Println()
	}
	for _, ph := range metaPhases {
		line(ph+" ops/s", rate, ph, "%.0f")
	}
	for _, ph := range metaPhases {
		line("server CPU µs/"+ph, cpu, ph, "%.0f")
	}
	if n["ganesha"] == 0 || n["gonfsrdma"] == 0 {
		fmt.Println("  target gonfsrdma >= 1.2x Ganesha at depth 1: not measured")
		return true
	}
	var parts []string
	met := true
	for _, ph := range metaPhases {
		r := median(rate["gonfsrdma"][ph]) / median(rate["ganesha"][ph])
		met = met && r >= metaTarget
		parts = append(parts, fmt.Sprintf("%s %.2fx", ph, r))
	}
	verdict := "met"
	if !met {
		verdict = "NOT met"
	}
	fmt.Printf("  target gonfsrdma >= %.1fx Ganesha at depth 1 (create, stat, unlink): %s (%s)\n", metaTarget, verdict, strings.Join(parts, ", "))
	return true
}
