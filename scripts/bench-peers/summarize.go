package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gonfsrdma/gonfsrdma/bench"
)

// row is one line of the table: a phase and how to read a number from it.
type row struct {
	label  string
	phase  string
	get    func(*bench.Phase) float64
	format string
	lower  bool // lower is better
}

var rows = []row{
	{"seq write MiB/s", bench.PhaseWrite, func(p *bench.Phase) float64 { return p.MiBps }, "%.1f", false},
	{"seq read MiB/s", bench.PhaseRead, func(p *bench.Phase) float64 { return p.MiBps }, "%.1f", false},
	{"rand read 4K IOPS", bench.PhaseRandRead, func(p *bench.Phase) float64 { return p.OpsPerSec }, "%.0f", false},
	{"create ops/s", bench.PhaseCreate, func(p *bench.Phase) float64 { return p.OpsPerSec }, "%.0f", false},
	{"stat ops/s", bench.PhaseStat, func(p *bench.Phase) float64 { return p.OpsPerSec }, "%.0f", false},
	{"remove ops/s", bench.PhaseRemove, func(p *bench.Phase) float64 { return p.OpsPerSec }, "%.0f", false},
	{"CPU s/GiB write", bench.PhaseWrite, func(p *bench.Phase) float64 { return p.CPUPerGiB }, "%.3f", true},
	{"CPU s/GiB read", bench.PhaseRead, func(p *bench.Phase) float64 { return p.CPUPerGiB }, "%.3f", true},
	{"CPU µs/rand read", bench.PhaseRandRead, func(p *bench.Phase) float64 { return p.CPUPerOpUs }, "%.1f", true},
	{"CPU µs/create", bench.PhaseCreate, func(p *bench.Phase) float64 { return p.CPUPerOpUs }, "%.1f", true},
	{"CPU µs/stat", bench.PhaseStat, func(p *bench.Phase) float64 { return p.CPUPerOpUs }, "%.1f", true},
	{"CPU µs/remove", bench.PhaseRemove, func(p *bench.Phase) float64 { return p.CPUPerOpUs }, "%.1f", true},
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return -1
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// results are the medians' inputs: vals[server][row] holds one value per
// repetition, reps[server] the number of repetitions read, cfg the first
// run's workload.
type results struct {
	vals map[string][][]float64
	reps map[string]int
	cfg  *bench.Result
}

// load reads dir's SERVER.REP.json files of each server; it exits when a
// file cannot be read or parsed.
func load(dir string, servers []string) *results {
	res := &results{vals: map[string][][]float64{}, reps: map[string]int{}}
	for _, srv := range servers {
		res.vals[srv] = make([][]float64, len(rows))
		files, _ := filepath.Glob(filepath.Join(dir, srv+".*.json"))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			var r bench.Result
			if err := json.Unmarshal(b, &r); err != nil {
				fmt.Fprintf(os.Stderr, "%s: %v\n", f, err)
				os.Exit(1)
			}
			if res.cfg == nil {
				res.cfg = &r
			}
			res.reps[srv]++
			for i, rw := range rows {
				if p := r.Phase(rw.phase); p != nil && (!rw.lower || p.ServerCPUSeconds >= 0) {
					res.vals[srv][i] = append(res.vals[srv][i], rw.get(p))
				}
			}
		}
	}
	return res
}

// med is the median of row i for srv, -1 when there is none (also for a
// server that was not run).
func (res *results) med(srv string, i int) float64 {
	if len(res.vals[srv]) == 0 {
		return -1
	}
	return median(res.vals[srv][i])
}

// printTableHead prints a side-by-side table's header and separator lines:
// a "metric" column labelWidth wide, then one right-aligned column per
// server, headed with its repetition count.
func printTableHead(labelWidth int, servers []string, reps map[string]int) {
	fmt.Printf("| %-*s |", labelWidth, "metric")
	for _, s := range servers {
		fmt.Printf(" %-18s |", fmt.Sprintf("%s (n=%d)", s, reps[s]))
	}
	fmt.Println()
	fmt.Print("|" + strings.Repeat("-", labelWidth+2) + "|")
	for range servers {
		fmt.Print(strings.Repeat("-", 19) + ":|")
	}
	fmt.Println()
}

// printTable prints the workload line and the side-by-side table of rows.
func (res *results) printTable(servers []string) {
	cfg := res.cfg
	fmt.Printf("Medians over repetitions; (x.xx) = ratio to gonfsrdma. Workload: %s file, %s blocks, qd %d; %s random reads at qd %d; %d files; one TCP connection, loopback.\n",
		bench.FormatSize(cfg.Size), bench.FormatSize(int64(cfg.Block)), cfg.QD, bench.FormatSize(int64(cfg.RandBlock)), cfg.RandQD, cfg.Files)
	printTableHead(18, servers, res.reps)
	for i, rw := range rows {
		fmt.Printf("| %-18s |", rw.label)
		base := res.med("gonfsrdma", i)
		for _, s := range servers {
			m := res.med(s, i)
			cell := "n/a"
			if m >= 0 {
				cell = fmt.Sprintf(rw.format, m)
				if s != "gonfsrdma" && base > 0 && m > 0 {
					cell += fmt.Sprintf(" (%.2f)", m/base)
				}
			}
			fmt.Printf(" %18s |", cell)
		}
		fmt.Println()
	}
}

// belowIn lists the rate rows (the first six) where gonfsrdma's median
// is below peer's.
func (res *results) belowIn(peer string) []string {
	var worse []string
	for i, rw := range rows[:6] {
		if res.med("gonfsrdma", i) < res.med(peer, i) {
			worse = append(worse, rw.label)
		}
	}
	return worse
}

func main() {
	if len(os.Args) == 3 && os.Args[1] == "-ceph" {
		cephSummary(os.Args[2])
		return
	}
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: summarize RESULTS_DIR SERVER... | summarize -ceph RESULTS_DIR")
		os.Exit(2)
	}
	dir, servers := os.Args[1], os.Args[2:]
	res := load(dir, servers)
	if res.cfg == nil {
		fmt.Println("no results")
		os.Exit(1)
	}
	res.printTable(servers)
	med, reps := res.med, res.reps

	// The targets (loopback TCP).
	get := func(srv, label string) float64 {
		for i, rw := range rows {
			if rw.label == label {
				return med(srv, i)
			}
		}
		return -1
	}
	verdict := func(ok, known bool) string {
		switch {
		case !known:
			return "not measured"
		case ok:
			return "met"
		}
		return "NOT met"
	}
	fmt.Println()
	fmt.Println("Targets:")
	if reps["ganesha"] > 0 {
		worse := res.belowIn("ganesha")
		fmt.Printf("  gonfsrdma >= Ganesha VFS in every row: %s", verdict(len(worse) == 0, true))
		if len(worse) > 0 {
			fmt.Printf(" (below in: %s)", strings.Join(worse, ", "))
		}
		fmt.Println()
	} else {
		fmt.Println("  gonfsrdma >= Ganesha VFS in every row: not measured (Ganesha did not run)")
	}
	g, n := get("gonfsrdma", "seq read MiB/s"), get("go-nfs", "seq read MiB/s")
	fmt.Printf("  seq read >= 5x go-nfs: %s (%.2fx)\n", verdict(g >= 5*n, n > 0 && g > 0), g/n)
	worstMeta := 1e300
	for _, l := range []string{"create ops/s", "stat ops/s", "remove ops/s"} {
		if gv, nv := get("gonfsrdma", l), get("go-nfs", l); nv > 0 {
			worstMeta = min(worstMeta, gv/nv)
		}
	}
	fmt.Printf("  metadata ops/s >= 2x go-nfs (each of create, stat, remove): %s (worst %.2fx)\n", verdict(worstMeta >= 2, worstMeta < 1e300), worstMeta)
	rc := get("gonfsrdma", "CPU s/GiB read")
	fmt.Printf("  server CPU <= 0.4 s per GiB read: %s (%.3f s)\n", verdict(rc <= 0.4, rc >= 0), rc)
	worstCPU := 0.0
	for _, l := range []string{"CPU µs/create", "CPU µs/stat", "CPU µs/remove"} {
		worstCPU = max(worstCPU, get("gonfsrdma", l))
	}
	fmt.Printf("  server CPU <= 100 µs per metadata op (each of create, stat, remove): %s (worst %.1f µs)\n", verdict(worstCPU <= 100, worstCPU > 0), worstCPU)
	metaOK := metaTable(dir, servers)
	iperfOK := iperfLine(dir, servers, func(srv string) float64 { return get(srv, "seq read MiB/s") })
	rates, _ := iperfRates(dir)
	fioOK := fioTable(dir, servers, median(rates))
	if !clientTable(dir, servers) || !metaOK || !iperfOK || !fioOK {
		os.Exit(1)
	}
}
