package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// clientChecks are the lines of client.SERVER.REP.tsv written by
// bench-peers.sh's client_checks: the user-space client (gonfsrdma cp,
// ls -R) and libnfs's nfs-cp against the same server, same file.
var clientChecks = []string{"gonfsrdma cp in", "nfs-cp in", "gonfsrdma cp out", "nfs-cp out", "gonfsrdma ls -R"}

// clientTable prints, per server, the median time of each check over the
// repetitions that passed it, the number that failed, and the speed-up of
// gonfsrdma cp over nfs-cp (time ratio) in each direction. It returns
// false when any check failed.
func clientTable(dir string, servers []string) bool {
	type cell struct {
		ms     []float64
		failed []string
	}
	res := map[string]map[string]*cell{}
	ok := true
	for _, srv := range servers {
		res[srv] = map[string]*cell{}
		for _, c := range clientChecks {
			res[srv][c] = &cell{}
		}
		files, _ := filepath.Glob(filepath.Join(dir, "client."+srv+".*.tsv"))
		for _, f := range files {
			fh, err := os.Open(f)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			sc := bufio.NewScanner(fh)
			for sc.Scan() {
				fields := strings.Split(sc.Text(), "\t")
				if len(fields) != 4 || res[srv][fields[0]] == nil {
					fmt.Fprintf(os.Stderr, "%s: malformed line %q\n", f, sc.Text())
					os.Exit(1)
				}
				c := res[srv][fields[0]]
				if fields[1] != "PASS" {
					c.failed = append(c.failed, fields[3])
					ok = false
					continue
				}
				ms, err := strconv.ParseFloat(fields[2], 64)
				if err != nil {
					fmt.Fprintf(os.Stderr, "%s: %v\n", f, err)
					os.Exit(1)
				}
				c.ms = append(c.ms, ms)
			}
			fh.Close()
		}
	}
	fmt.Println()
	fmt.Println("User-space client against each server (the bench file, medians in ms of the repetitions that passed; copies compared byte for byte):")
	fmt.Printf("| %-24s |", "check")
	for _, s := range servers {
		fmt.Printf(" %-16s |", s)
	}
	fmt.Println()
	fmt.Print("|" + strings.Repeat("-", 26) + "|")
	for range servers {
		fmt.Print(strings.Repeat("-", 17) + ":|")
	}
	fmt.Println()
	for _, c := range clientChecks {
		fmt.Printf("| %-24s |", c)
		for _, s := range servers {
			v := res[s][c]
			txt := "n/a"
			if len(v.ms) > 0 {
				txt = fmt.Sprintf("%.0f", median(v.ms))
			}
			if len(v.failed) > 0 {
				txt += fmt.Sprintf(" FAIL×%d", len(v.failed))
			}
			fmt.Printf(" %16s |", txt)
		}
		fmt.Println()
	}
	for _, dirn := range []string{"in", "out"} {
		fmt.Printf("| %-24s |", "speed-up cp "+dirn+" vs nfs-cp")
		for _, s := range servers {
			g, l := median(res[s]["gonfsrdma cp "+dirn].ms), median(res[s]["nfs-cp "+dirn].ms)
			txt := "n/a"
			if g > 0 && l > 0 {
				txt = fmt.Sprintf("%.2fx", l/g)
			}
			fmt.Printf(" %16s |", txt)
		}
		fmt.Println()
	}
	for _, s := range servers {
		for _, c := range clientChecks {
			for _, why := range res[s][c].failed {
				fmt.Printf("  FAIL %s, %s: %s\n", s, c, why)
			}
		}
	}
	return ok
}
