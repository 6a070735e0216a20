package daemon

// summary.go: start-up and reload messages that explain themselves. Once
// every listener is up, one block says what is served where (version,
// transports and addresses, RDMA devices and ports or why there are
// none, rpcbind, locking, metrics, state, every export's effective
// options); a reload logs what changed in the export table, and a
// refused reload each error with its file:line:column. A block is one
// log entry per line, so the journal keeps each line's priority.

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/gonfsrdma/gonfsrdma/exports"
	"github.com/gonfsrdma/gonfsrdma/verbs"
)

// logBlock logs lines as consecutive entries at level, without the
// caller (the same for every line).
func logBlock(log *zap.Logger, level zapcore.Level, lines []string) {
	l := log.WithOptions(zap.WithCaller(false))
	for _, line := range lines {
		if ce := l.Check(level, line); ce != nil {
			ce.Write()
		}
	}
}

// summary is the start-up block.
func (d *Daemon) summary() []string {
	cfg := &d.cfg
	version := cfg.Version
	if version == "" {
		version = "(unversioned)"
	}
	lines := []string{fmt.Sprintf("gonfsrdma %s serving, pid %d:", version, os.Getpid())}
	add := func(k, format string, a ...any) {
		lines = append(lines, fmt.Sprintf("  %-9s %s", k, fmt.Sprintf(format, a...)))
	}
	add("NFS/TCP", "%s", d.nfsL.Addr())
	add("NFS/RDMA", "%s", d.rdmaSummary())
	add("MOUNT", "%s (TCP and UDP)", d.mountL.Addr())
	switch {
	case cfg.NoPortmap:
		add("rpcbind", "off (--no-portmap): clients name port=, mountport= and mount with nolock")
	case d.pm == nil:
		add("rpcbind", "unavailable (the error above): clients name port=, mountport= and mount with nolock")
	case d.pm.Remote():
		add("rpcbind", "registered with the rpcbind at %s", d.pm.Addr())
	default:
		add("rpcbind", "%s (TCP and UDP)", d.pm.Addr())
	}
	if cfg.NoNLM {
		add("locking", "off (--no-nlm): clients mount with -o nolock")
	} else {
		grace := "no grace period (no client held locks before this start)"
		if d.nsm.InGrace() {
			grace = fmt.Sprintf("grace period of %v for lock reclaims", cfg.Grace)
		}
		add("locking", "NLM port %d, NSM port %d (TCP and UDP), NSM state %d, %s", d.nlmPort, d.nsmPort, d.nsm.State(), grace)
	}
	if a := d.MetricsAddr(); a != "" {
		add("metrics", "http://%s/metrics", a)
	} else {
		add("metrics", "off (--metrics-listen)")
	}
	add("state", "%s", cfg.StateDir)
	set := d.st.cur.Load()
	if cfg.ExportsFile != "" {
		add("exports", "%d from %s (SIGHUP reloads it):", len(set.table.Exports), cfg.ExportsFile)
	} else {
		add("exports", "the default export (no --exports), to loopback clients only:")
	}
	return append(lines, exportLines(set.table)...)
}

// rdmaSummary says on which port RDMA is served and over which devices,
// or why it is not.
func (d *Daemon) rdmaSummary() string {
	if d.cfg.RDMAAddr == "" {
		return "off (--rdma-listen is empty)"
	}
	if d.cfg.RDMAProvider != nil {
		if d.rdma == nil {
			return fmt.Sprintf("not served: %v", d.rdmaWhyNot)
		}
		return fmt.Sprintf("port %d over the provider given to the daemon", d.rdmaPort)
	}
	devs, err := verbs.Devices()
	var ports []string
	for _, dev := range devs {
		for _, p := range dev.Ports {
			ports = append(ports, dev.Name+" "+p.String())
		}
	}
	found := strings.Join(ports, "; ")
	switch {
	case d.rdma != nil:
		return fmt.Sprintf("port %d; devices: %s", d.rdmaPort, found)
	case errors.Is(d.rdmaWhyNot, verbs.ErrNoRDMA):
		return "not served: this binary was built without RDMA (CGO_ENABLED=0 or -tags nordma)"
	case err != nil:
		return fmt.Sprintf("not served: %v; listing %s: %v", d.rdmaWhyNot, verbs.SysfsDevices, err)
	case len(devs) == 0:
		return "not served: no RDMA device (" + verbs.SysfsDevices + " lists none; load the NIC's driver, " +
			"or for Soft-RoCE: rdma link add rxe0 type rxe netdev IFACE)"
	}
	return fmt.Sprintf("not served: %v; devices: %s", d.rdmaWhyNot, found)
}

// exportLines are an export table's rules, one a line, with their
// effective options.
func exportLines(t *exports.Table) []string {
	var lines []string
	for _, e := range t.Exports {
		for i := range e.Rules {
			path := ""
			if i == 0 {
				path = e.Path
			}
			lines = append(lines, fmt.Sprintf("    %-20s %s", path, ruleString(&e.Rules[i])))
		}
	}
	return lines
}

func ruleString(r *exports.ClientRule) string {
	return r.Spec + "(" + r.Options.String() + ")"
}

// diffExports says what changed from old to cur: "+ PATH RULE..." for
// an added export, "- PATH" for a removed one, and for a changed one
// "~ PATH" then the clients added (+), removed (-), whose options
// changed (old -> new), and the new order when only the order changed
// (the first matching client decides).
func diffExports(old, cur *exports.Table) []string {
	byPath := func(t *exports.Table) map[string]*exports.Export {
		m := make(map[string]*exports.Export, len(t.Exports))
		for _, e := range t.Exports {
			m[e.Path] = e
		}
		return m
	}
	was, now := byPath(old), byPath(cur)
	var lines []string
	for _, e := range old.Exports {
		if now[e.Path] == nil {
			lines = append(lines, "  - "+e.Path)
		}
	}
	for _, e := range cur.Exports {
		prev := was[e.Path]
		if prev == nil {
			var rules []string
			for i := range e.Rules {
				rules = append(rules, ruleString(&e.Rules[i]))
			}
			lines = append(lines, "  + "+e.Path+" "+strings.Join(rules, " "))
			continue
		}
		if changes := diffRules(prev, e); len(changes) > 0 {
			lines = append(lines, "  ~ "+e.Path)
			lines = append(lines, changes...)
		}
	}
	return lines
}

func diffRules(prev, cur *exports.Export) []string {
	index := func(e *exports.Export) map[string]*exports.ClientRule {
		m := make(map[string]*exports.ClientRule, len(e.Rules))
		for i := range e.Rules {
			m[e.Rules[i].Spec] = &e.Rules[i]
		}
		return m
	}
	was, now := index(prev), index(cur)
	var lines []string
	for i := range prev.Rules {
		if r := &prev.Rules[i]; now[r.Spec] == nil {
			lines = append(lines, "      - "+ruleString(r))
		}
	}
	var order, prevOrder []string
	for i := range cur.Rules {
		r := &cur.Rules[i]
		order = append(order, r.Spec)
		switch p := was[r.Spec]; {
		case p == nil:
			lines = append(lines, "      + "+ruleString(r))
		case p.Options.String() != r.Options.String():
			lines = append(lines, fmt.Sprintf("      %s: %s -> %s", r.Spec, p.Options.String(), r.Options.String()))
		}
	}
	for i := range prev.Rules {
		if now[prev.Rules[i].Spec] != nil {
			prevOrder = append(prevOrder, prev.Rules[i].Spec)
		}
	}
	var kept []string
	for _, s := range order {
		if was[s] != nil {
			kept = append(kept, s)
		}
	}
	if len(lines) == 0 && strings.Join(kept, " ") != strings.Join(prevOrder, " ") {
		lines = append(lines, "      clients now in the order "+strings.Join(order, " ")+" (the first that matches decides)")
	}
	return lines
}

// reloadLines is the block logged after a reload.
func reloadLines(file string, old, cur *exports.Table) []string {
	diff := diffExports(old, cur)
	head := fmt.Sprintf("exports reloaded from %s: %d exports", file, len(cur.Exports))
	if len(diff) == 0 {
		return []string{head + ", no change"}
	}
	return append([]string{head + "; changes:"}, diff...)
}

// refusedLines is the block logged for a reload that failed: every line
// of the error (an exports file's errors carry file:line:column).
func refusedLines(file string, err error) []string {
	lines := []string{fmt.Sprintf("reload of %s refused; the previous exports stay:", file)}
	for _, l := range strings.Split(err.Error(), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, "  "+l)
		}
	}
	return lines
}
