package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteTable prints r as an aligned table.
func WriteTable(w io.Writer, r *Result) error {
	fmt.Fprintf(w, "server %s over %s: %s file, %s blocks, qd %d; %s random reads at qd %d; %d files; seed %#x\n",
		r.Server, r.Transport, FormatSize(r.Size), FormatSize(int64(r.Block)), r.QD,
		FormatSize(int64(r.RandBlock)), r.RandQD, r.Files, r.Seed)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "phase\tops\tseconds\tMiB/s\tops/s\tmean lat µs\tverify µs\tsrv CPU s\tCPU s/GiB\tCPU µs/op\t")
	for _, p := range r.Phases {
		mib, perGiB, perOp, cpu, verify := "-", "-", "-", "-", "-"
		if p.MeanVerifyUs > 0 {
			verify = fmt.Sprintf("%.0f", p.MeanVerifyUs)
		}
		if p.Bytes > 0 {
			mib = fmt.Sprintf("%.1f", p.MiBps)
		}
		if p.ServerCPUSeconds >= 0 {
			cpu = fmt.Sprintf("%.2f", p.ServerCPUSeconds)
			if p.Bytes > 0 {
				perGiB = fmt.Sprintf("%.3f", p.CPUPerGiB)
			}
			perOp = fmt.Sprintf("%.1f", p.CPUPerOpUs)
		}
		fmt.Fprintf(tw, "%s\t%d\t%.2f\t%s\t%.0f\t%.0f\t%s\t%s\t%s\t%s\t\n",
			p.Name, p.Ops, p.Seconds, mib, p.OpsPerSec, p.MeanLatencyUs, verify, cpu, perGiB, perOp)
	}
	return tw.Flush()
}

// WriteJSON writes r as indented JSON.
func WriteJSON(w io.Writer, r *Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// ParseSize parses a byte count with an optional binary (KiB, MiB, GiB,
// K, M, G) or decimal (KB, MB, GB) suffix.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{
		{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
		{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
		{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"T", 1 << 40}, {"B", 1},
	} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n <= 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("bad size %q (want e.g. 1GiB, 256MiB, 4096)", s)
	}
	return n * mult, nil
}

// FormatSize prints n with the largest binary unit that divides it.
func FormatSize(n int64) string {
	for _, u := range []struct {
		name string
		v    int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.v && n%u.v == 0 {
			return fmt.Sprintf("%d%s", n/u.v, u.name)
		}
	}
	return fmt.Sprintf("%dB", n)
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat times; it is 100 on
// every Linux architecture Go supports.
const clockTicks = 100

// ProcCPU returns a Config.ServerCPU that reads the user+system time of
// process pid (all its threads) from /proc/PID/stat.
func ProcCPU(pid int) func() (time.Duration, error) {
	path := "/proc/" + strconv.Itoa(pid) + "/stat"
	return func() (time.Duration, error) {
		b, err := os.ReadFile(path)
		if err != nil {
			return 0, err
		}
		return parseProcStat(string(b))
	}
}

// parseProcStat returns utime+stime of a /proc/PID/stat line. The comm
// field may hold spaces and parentheses, so fields are counted after the
// last ')'.
func parseProcStat(s string) (time.Duration, error) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("malformed /proc stat line")
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("malformed /proc stat line")
	}
	u, err1 := strconv.ParseUint(f[11], 10, 64)
	st, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("malformed /proc stat times")
	}
	return time.Duration(u+st) * time.Second / clockTicks, nil
}
