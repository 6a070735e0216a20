package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// seqReadTarget is the target: gonfsrdma's sequential read at
// least this fraction of raw loopback TCP (iperf3, one stream, same run).
const seqReadTarget = 0.95

// iperfResult is the part of `iperf3 -J` read here: the receiver's rate
// over the whole test.
type iperfResult struct {
	End struct {
		SumReceived struct {
			BitsPerSecond float64 `json:"bits_per_second"`
		} `json:"sum_received"`
	} `json:"end"`
}

// iperfLine prints the median rate of dir's iperf3.REP.json files (one
// TCP stream over loopback, measured in each repetition before the
// servers) and each server's sequential read as a fraction of it. It
// prints nothing when there are no such files and returns false when one
// cannot be read.
func iperfLine(dir string, servers []string, seqRead func(srv string) float64) bool {
	rates, ok := iperfRates(dir)
	if !ok {
		return false
	}
	if len(rates) == 0 {
		return true
	}
	raw := median(rates)
	fmt.Println()
	fmt.Printf("Raw loopback TCP, one stream (iperf3 -t 3, n=%d, median): %.0f MiB/s; seq read as a fraction of it:", len(rates), raw)
	for _, s := range servers {
		if v := seqRead(s); v > 0 {
			fmt.Printf(" %s %.2f", s, v/raw)
		}
	}
	fmt.Println()
	if g := seqRead("gonfsrdma"); g > 0 {
		verdict := "met"
		if g/raw < seqReadTarget {
			verdict = "NOT met"
		}
		fmt.Printf("  target gonfsrdma seq read >= %.2fx raw loopback TCP: %s (%.2fx)\n", seqReadTarget, verdict, g/raw)
	}
	return true
}

// iperfRates reads dir's iperf3.REP.json files: the receiver's rate in
// MiB/s of each. It returns false when one cannot be read.
func iperfRates(dir string) ([]float64, bool) {
	files, _ := filepath.Glob(filepath.Join(dir, "iperf3.*.json"))
	var rates []float64
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return nil, false
		}
		var r iperfResult
		if err := json.Unmarshal(b, &r); err != nil || r.End.SumReceived.BitsPerSecond <= 0 {
			fmt.Fprintf(os.Stderr, "%s: no receiver rate (%v)\n", f, err)
			return nil, false
		}
		rates = append(rates, r.End.SumReceived.BitsPerSecond/8/(1<<20))
	}
	return rates, true
}
