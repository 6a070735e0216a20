package main

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
)

func TestSysmonEnv(t *testing.T) {
	for _, c := range []struct {
		name string
		env  []string
		want []string // nil: leave the environment as it is
	}{
		{"no GODEBUG", []string{"PATH=/bin", "HOME=/root"}, []string{"PATH=/bin", "HOME=/root", "GODEBUG=" + sysmonSetting}},
		{"empty GODEBUG", []string{"GODEBUG=", "PATH=/bin"}, []string{"GODEBUG=" + sysmonSetting, "PATH=/bin"}},
		{"other settings kept", []string{"GODEBUG=madvdontneed=1,gctrace=0"}, []string{"GODEBUG=madvdontneed=1,gctrace=0," + sysmonSetting}},
		{"set already (the re-execution)", []string{"GODEBUG=" + sysmonSetting}, nil},
		{"the administrator's default", []string{"PATH=/bin", "GODEBUG=gctrace=0,schedtrace=0"}, nil},
		{"a trace asked for", []string{"GODEBUG=schedtrace=1000,scheddetail=1"}, nil},
		{"a name that only ends like it", []string{"GODEBUG=xschedtrace=1"}, []string{"GODEBUG=xschedtrace=1," + sysmonSetting}},
	} {
		got := sysmonEnv(c.env)
		if !slices.Equal(got, c.want) || (got == nil) != (c.want == nil) {
			t.Errorf("%s: sysmonEnv(%q) = %q, want %q", c.name, c.env, got, c.want)
		}
	}
}

// TestServeReexecsWithSysmonSetting checks that serve, started as systemd
// starts it, runs under GODEBUG with sysmonSetting in the process systemd
// started (the same PID sent READY=1).
func TestServeReexecsWithSysmonSetting(t *testing.T) {
	n := startNotified(t)
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", n.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(strings.Split(string(env), "\x00"), "GODEBUG="+sysmonSetting) {
		t.Errorf("serve (pid %d) runs without GODEBUG=%s", n.cmd.Process.Pid, sysmonSetting)
	}
	n.cmd.Process.Signal(syscall.SIGTERM)
	n.waitExit(t)
}
