package exports

// A Table and everything reachable from it are read-only once built:
// share them freely between goroutines. Holder swaps whole tables.

import (
	"bufio"
	"fmt"
	"io"
	"net/netip"
	"path"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Pos is a position in an exports file. Line and Col count from 1; Col
// counts bytes. A zero Col means "the whole line".
type Pos struct {
	File      string
	Line, Col int
}

// String returns "file:line:col" (or "file:line" without a column).
func (p Pos) String() string {
	s := p.File + ":" + strconv.Itoa(p.Line)
	if p.Col > 0 {
		s += ":" + strconv.Itoa(p.Col)
	}
	return s
}

// ClientRule is one "client(options)" of an export line.
type ClientRule struct {
	Spec    string  // the client as written: "*", "10.0.0.0/8", "*.lab.example", ...
	Options Options // effective options
	Pos     Pos     // where the client starts

	m matcher
}

// Export is one exported path with its client rules in file order.
type Export struct {
	Path  string       // cleaned absolute path
	Rules []ClientRule // first match wins
	Pos   Pos          // where the path starts

	rev *revCache // shared by the Table; nil if no rule needs reverse names
}

// Table is a parsed exports file: the exports in file order.
type Table struct {
	Exports []*Export
}

// Lookup returns the export whose path is exactly p (after cleaning),
// or nil. Exports are not inherited by subdirectories.
func (t *Table) Lookup(p string) *Export {
	if t == nil {
		return nil
	}
	p = path.Clean(p)
	for _, e := range t.Exports {
		if e.Path == p {
			return e
		}
	}
	return nil
}

// ForMount is the export a MOUNT of dirpath mounts, and the path of the
// directory below that export's root ("" for the root itself): as
// mountd, an exported path mounts that export, and a directory below
// exports mounts with the rules of the export whose path is the longest
// prefix of dirpath by whole components. nil when no export covers it.
// The rest (cleaned, so without "..") is not checked: it may name
// nothing; nfs/mount's WalkDir resolves it.
func (t *Table) ForMount(dirpath string) (*Export, string) {
	if e := t.Lookup(dirpath); e != nil {
		return e, ""
	}
	if t == nil {
		return nil, ""
	}
	p := path.Clean(dirpath)
	var best *Export
	for _, e := range t.Exports {
		root := e.Path
		if root != "/" && !strings.HasPrefix(p, root+"/") {
			continue
		}
		if best == nil || len(root) > len(best.Path) {
			best = e
		}
	}
	if best == nil {
		return nil, ""
	}
	return best, strings.TrimPrefix(strings.TrimPrefix(p, best.Path), "/")
}

// Match returns the first rule, in file order, that covers client, and
// whether there is one. IPv4-mapped IPv6 addresses match as IPv4. Rules
// with name wildcards use the client's forward-confirmed reverse names,
// looked up (and cached per Table) only if such a rule is reached; that
// lookup may block for a few seconds on a slow resolver.
func (e *Export) Match(client netip.Addr) (*ClientRule, bool) {
	if e == nil || !client.IsValid() {
		return nil, false
	}
	client = client.Unmap().WithZone("")
	var names []string
	looked := false
	getNames := func() []string {
		if !looked {
			looked = true
			if e.rev != nil {
				names = e.rev.names(client)
			}
		}
		return names
	}
	for i := range e.Rules {
		if e.Rules[i].m.match(client, getNames) {
			return &e.Rules[i], true
		}
	}
	return nil, false
}

// Groups returns the client specs of the export in file order without
// duplicates: the group list of a MOUNT EXPORT reply (showmount -e).
func (e *Export) Groups() []string {
	var g []string
	seen := make(map[string]bool)
	for i := range e.Rules {
		s := e.Rules[i].Spec
		if !seen[s] {
			seen[s] = true
			g = append(g, s)
		}
	}
	return g
}

// Default returns the table used when no exports file is given: dir
// (absolute; it is cleaned) exported rw, insecure, root_squash, fsid=1,
// backend=os, to loopback clients only (127.0.0.0/8 and ::1).
func Default(dir string) (*Table, error) {
	if !path.IsAbs(dir) {
		return nil, fmt.Errorf("exports: export path %q is not absolute", dir)
	}
	o := DefaultOptions()
	o.ReadOnly = false
	o.Insecure = true
	o.FSID, o.FSIDSet = 1, true
	pos := Pos{File: "(default)"}
	e := &Export{Path: path.Clean(dir), Pos: pos}
	for _, p := range []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")} {
		m := matcher{kind: matchPrefix, prefix: p}
		e.Rules = append(e.Rules, ClientRule{Spec: m.canonical(), Options: o.clone(), Pos: pos, m: m})
	}
	return &Table{Exports: []*Export{e}}, nil
}

// WriteTable prints the effective table in exports(5) syntax that parses
// back to the same table: one export per logical line, one client rule per
// physical line, every option spelled out:
//
//	/srv/data  10.0.0.0/8(rw,async,insecure,root_squash,anonuid=65534,anongid=65534,fsid=1,sec=sys,transports=tcp:rdma,backend=os) \
//	           192.0.2.10(ro,async,secure,root_squash,anonuid=65534,anongid=65534,fsid=1,sec=sys,transports=tcp:rdma,backend=os)
//
// A trailing comment shows what a host name resolved to and the options
// that were accepted but ignored.
func WriteTable(w io.Writer, t *Table) error {
	bw := bufio.NewWriter(w)
	for _, e := range t.Exports {
		p := escapePath(e.Path)
		indent := strings.Repeat(" ", len(p)+2)
		for i := range e.Rules {
			r := &e.Rules[i]
			if i == 0 {
				bw.WriteString(p + "  ")
			} else {
				bw.WriteString(indent)
			}
			fmt.Fprintf(bw, "%s(%s)", r.m.canonical(), r.Options.String())
			if i < len(e.Rules)-1 {
				bw.WriteString(" \\")
			}
			if notes := r.notes(); notes != "" {
				bw.WriteString("  # " + notes)
			}
			bw.WriteByte('\n')
		}
	}
	return bw.Flush()
}

// notes says what a host name resolved to and which options were ignored.
func (r *ClientRule) notes() string {
	var notes []string
	if r.m.kind == matchHost {
		if r.m.unknown {
			notes = append(notes, r.m.name+" did not resolve")
		} else {
			as := make([]string, len(r.m.addrs))
			for j, a := range r.m.addrs {
				as[j] = a.String()
			}
			notes = append(notes, r.m.name+" = "+strings.Join(as, " "))
		}
	}
	if len(r.Options.Ignored) > 0 {
		notes = append(notes, "ignored: "+strings.Join(r.Options.Ignored, ","))
	}
	return strings.Join(notes, "; ")
}

// escapePath writes a path with octal escapes for the bytes the parser
// treats specially (white space, quotes, '#', '\') and control bytes.
func escapePath(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c <= ' ' || c == 0x7f || c == '"' || c == '#' || c == '\\' {
			fmt.Fprintf(&b, "\\%03o", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// Holder holds the current Table and swaps it atomically; it is safe for
// concurrent use. Read the table with Load on each call, so that a reload
// applies to the next call. The zero Holder holds no table and reloads
// with zero ParseOptions.
type Holder struct {
	opts ParseOptions
	cur  atomic.Pointer[Table]
	mu   sync.Mutex // serializes Reload
}

// NewHolder returns a Holder holding t (which may be nil) that parses
// reloads with opts.
func NewHolder(t *Table, opts ParseOptions) *Holder {
	h := &Holder{opts: opts}
	h.cur.Store(t)
	return h
}

// Load returns the current table (nil if none was ever set).
func (h *Holder) Load() *Table { return h.cur.Load() }

// Set replaces the current table.
func (h *Holder) Set(t *Table) { h.cur.Store(t) }

// Reload parses the file at path and, if it has no errors, makes it the
// current table. On error the old table stays current and the error
// (an ErrorList for problems in the file) is returned. Warnings are
// returned either way.
func (h *Holder) Reload(path string) ([]Warning, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	t, warns, err := Load(path, h.opts)
	if err != nil {
		return warns, err
	}
	h.cur.Store(t)
	return warns, nil
}
