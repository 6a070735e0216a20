package main

import (
	"net/url"
	"strings"
	"testing"
)

// targetOf turns startExport's URL pattern into SERVER:/EXPORT and its
// NFS and MOUNT ports.
func targetOf(t *testing.T, u string) (target, port, mountPort string) {
	t.Helper()
	p, err := url.Parse(strings.Replace(u, "%s", "", 1))
	if err != nil {
		t.Fatal(err)
	}
	return p.Hostname() + ":" + p.Path, p.Port(), p.Query().Get("mountport")
}

// TestFlagsAfterArguments runs bench and conformance with their flags
// after SERVER:/EXPORT, as people type them, and before it.
func TestFlagsAfterArguments(t *testing.T) {
	_, u := startExport(t)
	target, port, mountPort := targetOf(t, u)
	small := []string{"--size", "64KiB", "--block", "16KiB", "--files", "4", "--rand-ops", "16", "--quiet"}
	for _, args := range [][]string{
		append([]string{"bench", target, "--port", port, "--mountport", mountPort}, small...),
		append(append([]string{"bench", "--port", port, "--mountport", mountPort}, small...), target),
	} {
		out, errOut, code := run(t, args...)
		if code != 0 {
			t.Fatalf("gonfsrdma %s: exit %d: %s", strings.Join(args, " "), code, errOut)
		}
		if !strings.Contains(out, "seq-write") || !strings.Contains(out, "rand-read") {
			t.Fatalf("gonfsrdma %s: no result table:\n%s", strings.Join(args, " "), out)
		}
	}
	// A code after the flags, and flags after a code.
	for _, args := range [][]string{
		{"conformance", target, "--port", port, "--mountport", mountPort, "--maketree", "RPC1"},
		{"conformance", target, "RPC1", "--port", port, "--mountport", mountPort, "--maketree"},
	} {
		out, errOut, code := run(t, args...)
		if code != 0 {
			t.Fatalf("gonfsrdma %s: exit %d: %s\n%s", strings.Join(args, " "), code, errOut, out)
		}
		if !strings.Contains(out, "RPC1") || !strings.Contains(out, "PASS") {
			t.Fatalf("gonfsrdma %s: RPC1 did not pass:\n%s", strings.Join(args, " "), out)
		}
	}
}

// TestUsageErrorsSayWhatToType checks the exact one-line message and
// exit code 2 of each kind of usage mistake.
func TestUsageErrorsSayWhatToType(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"benhc"}, "gonfsrdma: there is no command \"benhc\"; did you mean `gonfsrdma bench`? (`gonfsrdma --help` lists the commands)"},
		{[]string{"frobnicate"}, "gonfsrdma: there is no command \"frobnicate\" (`gonfsrdma --help` lists the commands)"},
		{[]string{"exports", "chek"}, "gonfsrdma exports: there is no command \"chek\"; did you mean `gonfsrdma exports check`? (`gonfsrdma exports --help` lists the commands)"},
		{[]string{"bench", "127.0.0.1:/x", "--prot", "2049"}, "gonfsrdma bench: there is no flag --prot; did you mean --port N? (`gonfsrdma bench --help` lists the flags)"},
		{[]string{"serve", "--export", "/etc/exports"}, "gonfsrdma serve: there is no flag --export; did you mean --exports FILE? (`gonfsrdma serve --help` lists the flags)"},
		{[]string{"serve", "--listn", ":2049"}, "gonfsrdma serve: there is no flag --listn; did you mean --listen \":2049\"? (`gonfsrdma serve --help` lists the flags)"},
		{[]string{"ls", "-x", "nfs://127.0.0.1/x"}, "gonfsrdma ls: there is no flag -x (`gonfsrdma ls --help` lists the flags)"},
		{[]string{"bench", "127.0.0.1:/x", "--qd"}, "gonfsrdma bench: --qd needs a value, as in --qd 4"},
		{[]string{"serve", "--grace", "90"}, "gonfsrdma serve: \"90\" is not a valid duration for --grace; type it as in --grace 1m30s"},
		{[]string{"bench", "127.0.0.1:/x", "--port", "nfs"}, "gonfsrdma bench: \"nfs\" is not a valid number for --port; type it as in --port N"},
		{[]string{"serve", "/etc/hostname"}, "gonfsrdma serve: takes no arguments, only flags (got \"/etc/hostname\"); for an exports file type gonfsrdma serve --exports /etc/hostname"},
		{[]string{"bench", "nfs://10.1.2.3:2050/srv/data"}, "gonfsrdma bench: \"nfs://10.1.2.3:2050/srv/data\" is not SERVER:/EXPORT; type 10.1.2.3:/srv/data --port 2050"},
		{[]string{"bench", "10.1.2.3/srv/data"}, "gonfsrdma bench: \"10.1.2.3/srv/data\" is not SERVER:/EXPORT; type 10.1.2.3:/srv/data"},
		{[]string{"conformance", "/srv/data"}, "gonfsrdma conformance: \"/srv/data\" is not SERVER:/EXPORT; type SERVER:/srv/data, as in 127.0.0.1:/srv/data"},
		{[]string{"bench"}, "gonfsrdma bench: name one server and export: gonfsrdma bench [flags] SERVER:/EXPORT, as in gonfsrdma bench 127.0.0.1:/srv/gonfsrdma --size 256MiB"},
	} {
		out, errOut, code := run(t, tc.args...)
		if code != exitUsage || strings.TrimSpace(errOut) != tc.want {
			t.Errorf("gonfsrdma %s: exit %d, stderr %q, stdout %q\nwant exit 2 and %q", strings.Join(tc.args, " "), code, errOut, out, tc.want)
		}
	}
}

func TestVersionAndCompletion(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"-v"}} {
		out, errOut, code := run(t, args...)
		if code != 0 || out != "gonfsrdma version "+buildVersion()+"\n" {
			t.Errorf("gonfsrdma %s: exit %d, %q %q", args[0], code, out, errOut)
		}
	}
	if out := mustRun(t, "version"); out != "gonfsrdma "+buildVersion()+"\n" {
		t.Errorf("gonfsrdma version: %q", out)
	}
	for shell, marker := range map[string]string{"bash": "-F __gonfsrdma_bash_autocomplete gonfsrdma", "zsh": "#compdef gonfsrdma", "fish": "complete -c gonfsrdma -f"} {
		if out := mustRun(t, "completion", shell); !strings.Contains(out, marker) {
			t.Errorf("completion %s: no %q in\n%s", shell, marker, out)
		}
	}
	// What the scripts ask the binary: a command's subcommands, its
	// flags. (The root's own answer reads os.Args, the test binary's
	// here: the packaging check runs the bash script against the real
	// binary.)
	if subs := mustRun(t, "exports", "--generate-shell-completion"); !strings.HasPrefix(subs, "check:") {
		t.Errorf("subcommand completion of exports: %q", subs)
	}
	if flags := mustRun(t, "bench", "--p", "--generate-shell-completion"); flags != "--port:NFS port (default 2049 for tcp, 20049 for rdma)\n" {
		t.Errorf("flag completion of bench --p: %q", flags)
	}
}
