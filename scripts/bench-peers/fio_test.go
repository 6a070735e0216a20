package main

import (
	"strconv"
	"strings"
	"testing"
)

func fioJSON(job string, errno int, bytes, ios int64) string {
	dir := `"write":{"io_bytes":0,"total_ios":0},"read":{"io_bytes":%B,"bw_bytes":1048576,"iops":256,"total_ios":%N}`
	if job == "write" {
		dir = `"read":{"io_bytes":0,"total_ios":0},"write":{"io_bytes":%B,"bw_bytes":1048576,"iops":1,"total_ios":%N}`
	}
	dir = strings.NewReplacer("%B", itoa(bytes), "%N", itoa(ios)).Replace(dir)
	return `note: a line before the document
{"fio version":"fio-3.33","jobs":[{"jobname":"` + job + `","error":` + itoa(int64(errno)) + `,` + dir +
		`,"job options":{"size":"4194304","bs":"1048576","iodepth":"4"}}]}`
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// TestCheckFioJob: a job passes only with status 0, an empty standard
// error, no job error and, for the sequential jobs, the whole size done.
func TestCheckFioJob(t *testing.T) {
	for _, tc := range []struct {
		name, status, json, stderr string
		job                        int
		fail                       string // "" = passes
	}{
		{"write passes", "0", fioJSON("write", 0, 4194304, 4), "", 0, ""},
		{"randread passes", "0", fioJSON("randread", 0, 8192, 2), "", 2, ""},
		{"exit status", "1", fioJSON("write", 0, 4194304, 4), "fio: boom\n", 0, "exit status 1 fio: boom"},
		{"timeout", "124", "", "", 0, "exit status 124"},
		{"nfs error on stderr only", "0", fioJSON("write", 0, 4194304, 4), "Failed NFS operation(code:-14): x\n", 0, "standard error: Failed NFS operation"},
		{"job error", "0", fioJSON("read", 5, 4194304, 4), "", 1, "job error 5"},
		{"short sequential job", "0", fioJSON("read", 0, 3145728, 3), "", 1, "3145728 bytes done of 4194304"},
		{"no I/O", "0", fioJSON("randread", 0, 0, 0), "", 2, "0 I/Os"},
		{"no output", "0", "", "", 1, "output:"},
	} {
		r := checkFioJob(tc.job, tc.status, 0.5, []byte(tc.json), []byte(tc.stderr))
		switch {
		case tc.fail == "" && r.failed != "":
			t.Errorf("%s: failed: %s", tc.name, r.failed)
		case tc.fail != "" && !strings.Contains(r.failed, tc.fail):
			t.Errorf("%s: failed = %q, want %q", tc.name, r.failed, tc.fail)
		}
	}
	r := checkFioJob(0, "0", 0.5, []byte(fioJSON("write", 0, 4194304, 4)), nil)
	if r.rate != 1 || r.cpu != 0.5*256 {
		t.Errorf("write: rate %v MiB/s, cpu %v s/GiB; want 1, 128", r.rate, r.cpu)
	}
	r = checkFioJob(2, "0", 0.5, []byte(fioJSON("randread", 0, 8192, 2)), nil)
	if r.rate != 256 || r.cpu != 0.25e6 {
		t.Errorf("randread: rate %v IOPS, cpu %v µs/op; want 256, 250000", r.rate, r.cpu)
	}
}
