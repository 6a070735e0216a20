package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// fioJobs are the jobs of bench-peers.sh's fio_client, in order: each
// writes fio.SERVER.REP.JOB.json (fio --output-format=json), .err (fio's
// standard error) and a line of fio.SERVER.REP.tsv (job, exit status,
// server CPU seconds or -1).
var fioJobs = []struct {
	name  string // the job
	label string // the table's rate row
	cpu   string // the table's CPU row
	read  bool   // the job's direction
	whole bool   // the job must move exactly the file's size
}{
	{"write", "seq write MiB/s", "CPU s/GiB write", false, true},
	{"read", "seq read MiB/s", "CPU s/GiB read", true, true},
	{"randread", "rand read 4K IOPS", "CPU µs/rand read", true, false},
}

// fioOutput is the part of fio's JSON output read here.
type fioOutput struct {
	FioVersion string `json:"fio version"`
	Jobs       []struct {
		Name  string  `json:"jobname"`
		Error int     `json:"error"`
		Read  fioDir  `json:"read"`
		Write fioDir  `json:"write"`
		Opts  fioOpts `json:"job options"`
	} `json:"jobs"`
}

type fioDir struct {
	IOBytes  int64   `json:"io_bytes"`
	BWBytes  float64 `json:"bw_bytes"`
	IOPS     float64 `json:"iops"`
	TotalIOs int64   `json:"total_ios"`
	ShortIOs int64   `json:"short_ios"`
	DropIOs  int64   `json:"drop_ios"`
}

type fioOpts struct {
	Size    string `json:"size"`
	BS      string `json:"bs"`
	IODepth string `json:"iodepth"`
}

// fioRun is one job's outcome in one repetition: its rate (MiB/s for the
// sequential jobs, IOPS for random reads) and server CPU cost (s/GiB,
// µs/op; -1 when not read), or why it failed.
type fioRun struct {
	rate, cpu float64
	failed    string
	opts      fioOpts
}

// checkFioJob validates one job's files: the exit status, fio's standard
// error (which must be empty: the nfs engine reports a failed NFS call
// there and not in the job's error), and the JSON: one job, no error, no
// short or dropped I/O, and for the sequential jobs exactly the size
// requested.
func checkFioJob(job int, status string, cpuSecs float64, jsonData, stderr []byte) fioRun {
	j := fioJobs[job]
	if status != "0" {
		return fioRun{failed: "exit status " + status + firstLine(stderr)}
	}
	if len(bytes.TrimSpace(stderr)) > 0 {
		return fioRun{failed: "standard error:" + firstLine(stderr)}
	}
	// fio may print notes before the JSON document.
	if i := bytes.IndexByte(jsonData, '{'); i > 0 {
		jsonData = jsonData[i:]
	}
	var out fioOutput
	if err := json.Unmarshal(jsonData, &out); err != nil {
		return fioRun{failed: "output: " + err.Error()}
	}
	if len(out.Jobs) != 1 {
		return fioRun{failed: fmt.Sprintf("output has %d jobs, not 1", len(out.Jobs))}
	}
	o := out.Jobs[0]
	d, other := o.Write, o.Read
	if j.read {
		d, other = o.Read, o.Write
	}
	size, _ := strconv.ParseInt(o.Opts.Size, 10, 64)
	switch {
	case o.Error != 0:
		return fioRun{failed: fmt.Sprintf("job error %d", o.Error)}
	case d.TotalIOs <= 0 || d.IOBytes <= 0 || other.IOBytes != 0:
		return fioRun{failed: fmt.Sprintf("%d I/Os, %d bytes (%d the other way)", d.TotalIOs, d.IOBytes, other.IOBytes)}
	case d.ShortIOs != 0 || d.DropIOs != 0:
		return fioRun{failed: fmt.Sprintf("%d short, %d dropped I/Os", d.ShortIOs, d.DropIOs)}
	case j.whole && d.IOBytes != size:
		return fioRun{failed: fmt.Sprintf("%d bytes done of %s", d.IOBytes, o.Opts.Size)}
	}
	r := fioRun{rate: d.BWBytes / (1 << 20), cpu: -1, opts: o.Opts}
	if !j.whole {
		r.rate = d.IOPS
	}
	if cpuSecs >= 0 {
		if j.whole {
			r.cpu = cpuSecs / (float64(d.IOBytes) / (1 << 30))
		} else {
			r.cpu = cpuSecs * 1e6 / float64(d.TotalIOs)
		}
	}
	return r
}

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	if s == "" {
		return ""
	}
	return " " + s
}

// loadFio reads dir's fio.SERVER.REP.tsv files and the files they name:
// runs[server][job] holds one fioRun per repetition. It returns false when
// a tsv file is malformed.
func loadFio(dir string, servers []string) (map[string][][]fioRun, map[string]int, bool) {
	runs := map[string][][]fioRun{}
	n := map[string]int{}
	for _, srv := range servers {
		runs[srv] = make([][]fioRun, len(fioJobs))
		files, _ := filepath.Glob(filepath.Join(dir, "fio."+srv+".*.tsv"))
		for _, f := range files {
			rep := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "fio."+srv+"."), ".tsv")
			if _, err := strconv.Atoi(rep); err != nil {
				continue // another server's name with srv as its prefix
			}
			b, err := os.ReadFile(f)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return nil, nil, false
			}
			seen := make([]bool, len(fioJobs))
			sc := bufio.NewScanner(bytes.NewReader(b))
			for sc.Scan() {
				fields := strings.Split(sc.Text(), "\t")
				job := -1
				for i, j := range fioJobs {
					if len(fields) == 3 && fields[0] == j.name {
						job = i
					}
				}
				cpuSecs, err := 0.0, error(nil)
				if job >= 0 {
					cpuSecs, err = strconv.ParseFloat(fields[2], 64)
				}
				if job < 0 || err != nil || seen[job] {
					fmt.Fprintf(os.Stderr, "%s: malformed line %q\n", f, sc.Text())
					return nil, nil, false
				}
				seen[job] = true
				base := filepath.Join(dir, "fio."+srv+"."+rep+"."+fields[0])
				jsonData, _ := os.ReadFile(base + ".json")
				stderr, _ := os.ReadFile(base + ".err")
				runs[srv][job] = append(runs[srv][job], checkFioJob(job, fields[1], cpuSecs, jsonData, stderr))
			}
			// A job the script did not get to (the run was cut short)
			// fails too.
			for i, ok := range seen {
				if !ok {
					runs[srv][i] = append(runs[srv][i], fioRun{failed: "no result"})
				}
			}
			n[srv]++
		}
	}
	return runs, n, true
}

// fioTable prints, per server, the median over repetitions of each fio
// job's rate and server CPU cost and the ratio to gonfsrdma. A cell is
// FAIL when any repetition of the job failed, with the reasons listed
// under the table. Then the targets for fio's rows: sequential
// read >= 1.0x Ganesha's and >= 0.95x raw loopback TCP (rawTCP, the iperf3
// median; <= 0 when not measured). It prints nothing when no server has
// fio results and returns false when a results file is malformed.
func fioTable(dir string, servers []string, rawTCP float64) bool {
	runs, n, ok := loadFio(dir, servers)
	if !ok {
		return false
	}
	var opts *fioOpts
	for _, s := range servers {
		for _, r := range runs[s][0] {
			if opts == nil && r.failed == "" {
				opts = &r.opts
			}
		}
	}
	total := 0
	for _, s := range servers {
		total += n[s]
	}
	if total == 0 {
		return true
	}
	// med is the median of get over srv's runs of job, or -2 when one
	// failed (-1: none).
	med := func(srv string, job int, get func(fioRun) float64) float64 {
		var v []float64
		for _, r := range runs[srv][job] {
			if r.failed != "" {
				return -2
			}
			if x := get(r); x >= 0 {
				v = append(v, x)
			}
		}
		return median(v)
	}
	rate := func(r fioRun) float64 { return r.rate }
	cpu := func(r fioRun) float64 { return r.cpu }
	fmt.Println()
	w := "fio with its libnfs engine (the getevents patch), one job at a time on one file"
	if opts != nil {
		w += fmt.Sprintf(": %s bytes sequentially in %s-byte blocks at depth %s, then 4 KiB random reads at depth %s", opts.Size, opts.BS, opts.IODepth, fioRandDepth(runs, servers))
	}
	fmt.Println(w + "; medians, (x.xx) = ratio to gonfsrdma, FAIL = a repetition failed:")
	printTableHead(18, servers, n)
	line := func(label string, job int, get func(fioRun) float64, format string) {
		fmt.Printf("| %-18s |", label)
		base := med("gonfsrdma", job, get)
		for _, s := range servers {
			m := med(s, job, get)
			cell := "n/a"
			switch {
			case m == -2:
				cell = "FAIL"
			case m >= 0:
				cell = fmt.Sprintf(format, m)
				if s != "gonfsrdma" && base > 0 && m > 0 {
					cell += fmt.Sprintf(" (%.2f)", m/base)
				}
			}
			fmt.Printf(" %18s |", cell)
		}
		fmt.Println()
	}
	for i, j := range fioJobs {
		format := "%.1f"
		if !j.whole {
			format = "%.0f"
		}
		line(j.label, i, rate, format)
	}
	for i, j := range fioJobs {
		format := "%.3f"
		if !j.whole {
			format = "%.1f"
		}
		line(j.cpu, i, cpu, format)
	}
	for _, s := range servers {
		for i, j := range fioJobs {
			for rep, r := range runs[s][i] {
				if r.failed != "" {
					fmt.Printf("  FAIL %s, fio %s (run %d of %d): %s\n", s, j.name, rep+1, len(runs[s][i]), r.failed)
				}
			}
		}
	}
	g, gn := med("gonfsrdma", 1, rate), med("ganesha", 1, rate)
	switch {
	case g == -2 || gn == -2:
		fmt.Println("  target fio seq read >= 1.0x Ganesha: NOT met (a run failed)")
	case g > 0 && gn > 0:
		fmt.Printf("  target fio seq read >= 1.0x Ganesha: %s (%.2fx)\n", metOrNot(g >= gn), g/gn)
	}
	if g > 0 && rawTCP > 0 {
		fmt.Printf("  target fio seq read >= %.2fx raw loopback TCP: %s (%.2fx)\n", seqReadTarget, metOrNot(g/rawTCP >= seqReadTarget), g/rawTCP)
	}
	return true
}

// fioRandDepth is the iodepth of the first random-read job that passed.
func fioRandDepth(runs map[string][][]fioRun, servers []string) string {
	for _, s := range servers {
		for _, r := range runs[s][2] {
			if r.failed == "" {
				return r.opts.IODepth
			}
		}
	}
	return "?"
}

func metOrNot(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}
