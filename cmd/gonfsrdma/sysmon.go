package main

import (
	"os"
	"strings"
	"syscall"
)

// sysmonSetting is the GODEBUG setting serve runs with: the scheduler
// trace at its longest period (2^31-1 ms, 24.8 days), which keeps the Go
// runtime's sysmon thread out of its deep sleep.
//
// Go's sysmon sleeps until woken whenever every P is idle, and the first
// system call after that wakes it (a futex wake-up, a thread switch) and
// sets it polling every 20 µs for at least 50 rounds. A server answering
// one call at a time is idle between every two calls, so each call paid
// that: on the host 18-22 % of the server's CPU samples at depth 1, in the
// one-vCPU guest the busiest thread (docs/performance.md, sections 12 and
// 13). With a scheduler trace set, sysmon never deep-sleeps; with nothing
// to retake it backs off to one round every 10 ms, as it already does
// under steady load. What it still does: retake a P from a system call
// that spans one of its rounds, preempt long-running goroutines, poll the
// network when nothing else has for 10 ms. The trace itself prints one
// line to standard error once the machine has been up 24.8 days, and
// every 24.8 days after.
const sysmonSetting = "schedtrace=2147483647"

// sysmonEnv returns env with sysmonSetting added to GODEBUG, or nil when
// GODEBUG already names schedtrace (set by the administrator, or by the
// re-execution that added it; GODEBUG=schedtrace=0 keeps Go's default).
func sysmonEnv(env []string) []string {
	out := make([]string, 0, len(env)+1)
	found := false
	for _, kv := range env {
		v, ok := strings.CutPrefix(kv, "GODEBUG=")
		if !ok {
			out = append(out, kv)
			continue
		}
		for _, s := range strings.Split(v, ",") {
			if strings.HasPrefix(strings.TrimSpace(s), "schedtrace=") {
				return nil
			}
		}
		if !found {
			found = true
			if v == "" {
				kv = "GODEBUG=" + sysmonSetting
			} else {
				kv = "GODEBUG=" + v + "," + sysmonSetting
			}
		}
		out = append(out, kv)
	}
	if !found {
		out = append(out, "GODEBUG="+sysmonSetting)
	}
	return out
}

// reexecForSysmon replaces this process with itself, same arguments and
// process ID, under sysmonEnv, when the environment does not already say
// what sysmon should do. GODEBUG is read once, as the runtime starts, so
// there is no other way to set it. It returns only when it did not
// re-execute: the error of execve, or nil.
func reexecForSysmon() error {
	env := sysmonEnv(os.Environ())
	if env == nil {
		return nil
	}
	return syscall.Exec("/proc/self/exe", os.Args, env)
}
