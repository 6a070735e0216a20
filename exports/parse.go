package exports

// The parser reads physical lines, strips comments, joins continuation
// lines into logical lines (keeping each byte's file position), splits a
// logical line into tokens and interprets them. Every problem is recorded
// with its position and parsing goes on, so one run reports them all.

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/gonfsrdma/gonfsrdma/internal/editdist"
)

// Error is a problem in an exports file.
type Error struct {
	Pos  Pos
	Msg  string
	Hint string // optional, e.g. `did you mean "rw"?`
}

// Error returns "file:line:col: message (hint)".
func (e *Error) Error() string {
	if e.Hint != "" {
		return e.Pos.String() + ": " + e.Msg + " (" + e.Hint + ")"
	}
	return e.Pos.String() + ": " + e.Msg
}

// ErrorList is every error found in one file, in file order.
type ErrorList []*Error

// Error joins the errors with newlines.
func (l ErrorList) Error() string {
	s := make([]string, len(l))
	for i, e := range l {
		s[i] = e.Error()
	}
	return strings.Join(s, "\n")
}

// Warning is a suspicious but accepted construct, or a host name that did
// not resolve.
type Warning struct {
	Pos  Pos
	Msg  string
	Hint string
}

// String returns "file:line:col: warning: message (hint)".
func (w Warning) String() string {
	s := w.Pos.String() + ": warning: " + w.Msg
	if w.Hint != "" {
		s += " (" + w.Hint + ")"
	}
	return s
}

// ParseOptions are the environment of Parse and Load.
type ParseOptions struct {
	// Resolver resolves host names at load and reverse-resolves clients
	// for wildcard rules at match time; nil means net.DefaultResolver.
	Resolver Resolver
	// StatDir checks that an export path of a backend=os export is a
	// usable directory; nil means os.Stat must succeed and report a
	// directory.
	StatDir func(path string) error
	// StatFile checks that a file an export names (ceph_conf,
	// ceph_keyring, ceph_fhkey) is a readable regular file; nil means
	// os.Stat must succeed and report a regular file.
	StatFile func(path string) error
	// BackendAvailable reports why this binary cannot open a backend
	// (one not compiled in), nil when it can; nil means every backend is.
	BackendAvailable func(backend string) error
}

// maxErrors bounds the ErrorList; one more entry says it was cut.
const maxErrors = 100

// Load reads and parses the exports file at path; see Parse.
func Load(path string, opts ParseOptions) (*Table, []Warning, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	return Parse(path, f, opts)
}

// Parse parses an exports file; name is used in positions. With any
// error in the file it returns a nil Table and an ErrorList holding every
// error found. A read error from r is returned as is.
func Parse(name string, r io.Reader, opts ParseOptions) (*Table, []Warning, error) {
	p := &parser{
		file:    name,
		opts:    opts,
		res:     opts.Resolver,
		tab:     &Table{},
		byPath:  make(map[string]*Export),
		byFSID:  make(map[uint32]*Export),
		resolve: make(map[string]resolved),
	}
	if p.res == nil {
		p.res = net.DefaultResolver
	}
	if err := p.read(r); err != nil {
		return nil, p.warns, err
	}
	if len(p.errs) > 0 {
		// Export-wide checks report late; show everything in file order.
		n := min(len(p.errs), maxErrors)
		slices.SortStableFunc(p.errs[:n], func(a, b *Error) int {
			return cmp.Or(cmp.Compare(a.Pos.Line, b.Pos.Line), cmp.Compare(a.Pos.Col, b.Pos.Col))
		})
		return nil, p.warns, p.errs
	}
	for _, e := range p.tab.Exports {
		for i := range e.Rules {
			if e.Rules[i].m.kind == matchWildcard {
				e.rev = p.rev
			}
		}
	}
	return p.tab, p.warns, nil
}

// lc is the position of one byte of a logical line.
type lc struct{ line, col int }

// text is a run of bytes with the position of each.
type text struct {
	b   []byte
	pos []lc
}

type resolved struct {
	addrs []netip.Addr
	err   error
}

type parser struct {
	file    string
	opts    ParseOptions
	res     Resolver
	errs    ErrorList
	warns   []Warning
	tab     *Table
	byPath  map[string]*Export
	byFSID  map[uint32]*Export
	resolve map[string]resolved
	rev     *revCache
}

func (p *parser) at(x lc) Pos { return Pos{File: p.file, Line: x.line, Col: x.col} }

func (p *parser) errorf(x lc, hint, format string, args ...any) {
	if len(p.errs) > maxErrors {
		return
	}
	if len(p.errs) == maxErrors {
		p.errs = append(p.errs, &Error{Pos: p.at(x), Msg: "too many errors"})
		return
	}
	p.errs = append(p.errs, &Error{Pos: p.at(x), Msg: fmt.Sprintf(format, args...), Hint: hint})
}

func (p *parser) warnf(x lc, hint, format string, args ...any) {
	p.warns = append(p.warns, Warning{Pos: p.at(x), Msg: fmt.Sprintf(format, args...), Hint: hint})
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'
}

// read splits the input into logical lines.
func (p *parser) read(r io.Reader) error {
	br := bufio.NewReader(r)
	var cur text
	bad := false // the logical line had a lexical error: drop it
	line := 0
	for {
		s, err := br.ReadString('\n')
		if err != nil && err != io.EOF {
			return err
		}
		if s == "" && err == io.EOF {
			break
		}
		line++
		s = strings.TrimSuffix(s, "\n")

		// Cut the comment: a '#' outside quotes that starts a token.
		cut, inQuote, quoteAt := len(s), false, 0
		for i := 0; i < len(s); i++ {
			switch c := s[i]; {
			case c == '"':
				inQuote = !inQuote
				quoteAt = i
			case c == '#' && !inQuote && (i == 0 || isSpace(s[i-1]) || s[i-1] == ')'):
				cut = i
			}
			if cut < len(s) {
				break
			}
		}
		if inQuote {
			p.errorf(lc{line, quoteAt + 1}, "quoted strings cannot span lines", "unterminated quoted string")
			bad = true
		}
		s = strings.TrimRightFunc(s[:cut], func(r rune) bool { return r < 0x80 && isSpace(byte(r)) })
		cont := strings.HasSuffix(s, "\\")
		if cont {
			s = s[:len(s)-1]
		}
		for i := 0; i < len(s); i++ {
			cur.b = append(cur.b, s[i])
			cur.pos = append(cur.pos, lc{line, i + 1})
		}
		if cont {
			// The joint separates tokens, like the newline it replaces.
			cur.b = append(cur.b, ' ')
			cur.pos = append(cur.pos, lc{line, len(s) + 1})
			if err == nil {
				continue
			}
		}
		if !bad {
			p.line(cur)
		}
		cur, bad = text{}, false
		if err == io.EOF {
			break
		}
	}
	return nil
}

// tokens splits a logical line at white space outside quotes.
func tokens(t text) []text {
	var toks []text
	inQuote := false
	start := -1
	for i, c := range t.b {
		if c == '"' {
			inQuote = !inQuote
		}
		if isSpace(c) && !inQuote {
			if start >= 0 {
				toks = append(toks, text{t.b[start:i], t.pos[start:i]})
				start = -1
			}
			continue
		}
		if start < 0 {
			start = i
		}
	}
	if start >= 0 {
		toks = append(toks, text{t.b[start:], t.pos[start:]})
	}
	return toks
}

// optState is Options plus the two independent knfsd squash flags, which
// only become a SquashMode once every option has been applied.
type optState struct {
	o                     Options
	rootSquash, allSquash bool
}

func defaultState() optState {
	return optState{o: DefaultOptions(), rootSquash: true}
}

func (s *optState) final() Options {
	o := s.o.clone()
	switch {
	case s.allSquash:
		o.Squash = AllSquash
	case s.rootSquash:
		o.Squash = RootSquash
	default:
		o.Squash = NoRootSquash
	}
	return o
}

// line interprets one logical line.
func (p *parser) line(t text) {
	toks := tokens(t)
	if len(toks) == 0 {
		return
	}
	ptok := toks[0]
	dir, ok := p.path(ptok)
	var e *Export
	if ok {
		e = &Export{Path: dir, Pos: p.at(ptok.pos[0])}
	}

	def := defaultState()
	rest := toks[1:]
	if len(rest) > 0 && len(rest[0].b) > 0 && rest[0].b[0] == '-' {
		d := rest[0]
		if len(d.b) == 1 {
			p.errorf(d.pos[0], `write "-opt,opt" with no space after "-"`, "empty default option list")
		} else {
			p.options(text{d.b[1:], d.pos[1:]}, &def)
		}
		rest = rest[1:]
	}

	var rules []ClientRule
	anyAt := -1 // index in rules of a "*" rule
	for _, tok := range rest {
		r, ok := p.client(tok, def)
		if !ok {
			continue
		}
		if anyAt >= 0 {
			p.warnf(tok.pos[0], "", "client %q is never used: %q at column %d matches every client first",
				r.Spec, rules[anyAt].Spec, rules[anyAt].Pos.Col)
		} else {
			for i := range rules {
				if rules[i].m.kind == r.m.kind && rules[i].m.canonical() == r.m.canonical() {
					p.warnf(tok.pos[0], "", "client %q is listed twice; the one at column %d wins",
						r.Spec, rules[i].Pos.Col)
					break
				}
			}
		}
		if r.m.kind == matchAny && anyAt < 0 {
			anyAt = len(rules)
		}
		rules = append(rules, r)
	}
	if len(rest) == 0 {
		p.warnf(ptok.pos[0], `write "*(...)" to export to everyone on purpose`,
			"no client given: %s is exported to every host", string(ptok.b))
		rules = append(rules, ClientRule{Spec: "*", Options: def.final(), Pos: p.at(ptok.pos[0])})
	}
	if e == nil {
		return
	}
	e.Rules = rules
	p.export(e, ptok.pos[0])
}

func pickSync(async bool) string {
	if async {
		return "async"
	}
	return "sync"
}

// export checks an export as a whole and adds it to the table.
func (p *parser) export(e *Export, at lc) {
	if prev := p.byPath[e.Path]; prev != nil {
		p.errorf(at, "put all its clients on one line", "duplicate export path %q (first at %s)", e.Path, prev.Pos)
		return
	}
	p.byPath[e.Path] = e

	// The backend and fsid name the file system and its file handles, and
	// async decides whether its writes wait for storage, so they are
	// properties of the export: every client must agree.
	needDir := false
	for i := range e.Rules {
		r, r0 := &e.Rules[i], &e.Rules[0]
		lcr := lc{r.Pos.Line, r.Pos.Col}
		if r.Options.Backend != r0.Options.Backend {
			p.errorf(lcr, "set backend= once, in the default options after the path",
				"client %q has backend=%s but client %q has backend=%s; one export has one backend",
				r.Spec, r.Options.Backend, r0.Spec, r0.Options.Backend)
		}
		if r.Options.FSIDSet != r0.Options.FSIDSet || r.Options.FSID != r0.Options.FSID {
			p.errorf(lcr, "set fsid= once, in the default options after the path",
				"client %q has %s but client %q has %s; one export has one fsid",
				r.Spec, fsidString(&r.Options), r0.Spec, fsidString(&r0.Options))
		}
		if r.Options.Async != r0.Options.Async {
			p.errorf(lcr, "set sync or async once, in the default options after the path",
				"client %q has %s but client %q has %s; gonfsrdma applies sync/async to the whole export",
				r.Spec, pickSync(r.Options.Async), r0.Spec, pickSync(r0.Options.Async))
		}
		if r.Options.Ceph != r0.Options.Ceph {
			p.errorf(lcr, "set the ceph_* options once, in the default options after the path",
				"client %q has %q but client %q has %q; one export has one CephFS directory",
				r.Spec, r.Options.Ceph.String(), r0.Spec, r0.Options.Ceph.String())
		}
		if r.Options.Backend == BackendOS {
			needDir = true
		}
	}
	if len(e.Rules) > 0 {
		o := &e.Rules[0].Options
		if c := o.Ceph.String(); c != "" && o.Backend != BackendCephFS {
			p.errorf(at, "add backend=cephfs, or remove them", "%s: ceph_* options need backend=cephfs", c)
		}
		if p.opts.BackendAvailable != nil {
			if err := p.opts.BackendAvailable(o.Backend); err != nil {
				p.errorf(at, "", "backend=%s: %v", o.Backend, err)
			}
		}
		if o.Backend == BackendCephFS {
			for _, f := range []struct{ name, path string }{{"ceph_conf", o.Ceph.Conf}, {"ceph_keyring", o.Ceph.Keyring}, {"ceph_fhkey", o.Ceph.FHKey}} {
				if f.path == "" {
					continue
				}
				if err := p.statFile(f.path); err != nil {
					p.errorf(at, "", "%s=%s: %v", f.name, f.path, err)
				}
			}
		}
	}
	if len(e.Rules) > 0 && e.Rules[0].Options.FSIDSet {
		id := e.Rules[0].Options.FSID
		if prev := p.byFSID[id]; prev != nil {
			p.errorf(lc{e.Rules[0].Pos.Line, e.Rules[0].Pos.Col}, "each export needs its own fsid",
				"fsid=%d is already used by %q (%s)", id, prev.Path, prev.Pos)
		} else {
			p.byFSID[id] = e
		}
	}
	if needDir {
		if err := p.statDir(e.Path); err != nil {
			p.errorf(at, "create the directory, or use backend=mem", "cannot export %q: %v", e.Path, err)
		}
	}
	p.tab.Exports = append(p.tab.Exports, e)
}

func fsidString(o *Options) string {
	if !o.FSIDSet {
		return "no fsid"
	}
	return "fsid=" + strconv.FormatUint(uint64(o.FSID), 10)
}

func (p *parser) statDir(dir string) error {
	if p.opts.StatDir != nil {
		return p.opts.StatDir(dir)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return errors.New("not a directory")
	}
	return nil
}

func (p *parser) statFile(name string) error {
	if p.opts.StatFile != nil {
		return p.opts.StatFile(name)
	}
	fi, err := os.Stat(name)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return errors.New("not a regular file")
	}
	return nil
}

// path decodes and checks the export path token: quotes are removed,
// \ooo octal escapes decoded, the result must be absolute; it is cleaned.
func (p *parser) path(t text) (string, bool) {
	var b []byte
	ok := true
	for i := 0; i < len(t.b); i++ {
		c := t.b[i]
		switch c {
		case '"':
			continue
		case '\\':
			if i+3 < len(t.b) && isOctal(t.b[i+1]) && isOctal(t.b[i+2]) && isOctal(t.b[i+3]) {
				v := (int(t.b[i+1]-'0') << 6) | (int(t.b[i+2]-'0') << 3) | int(t.b[i+3]-'0')
				if v > 0xff || v == 0 {
					p.errorf(t.pos[i], "", "invalid escape %q in export path", string(t.b[i:i+4]))
					ok = false
				}
				b = append(b, byte(v))
				i += 3
				continue
			}
			p.errorf(t.pos[i], `write a space as \040 and a backslash as \134`, "invalid escape in export path")
			ok = false
			continue
		case 0:
			p.errorf(t.pos[i], "", "NUL byte in export path")
			ok = false
			continue
		}
		b = append(b, c)
	}
	if !ok {
		return "", false
	}
	s := string(b)
	if !strings.HasPrefix(s, "/") {
		hint := ""
		if s != "" && s[0] != '-' && s[0] != '*' && !strings.ContainsAny(s, "()") {
			hint = fmt.Sprintf("did you mean %q?", "/"+s)
		}
		p.errorf(t.pos[0], hint, "export path %q is not absolute", s)
		return "", false
	}
	return path.Clean(s), true
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

// client parses one "spec(options)", "spec" or "(options)" token.
func (p *parser) client(t text, def optState) (ClientRule, bool) {
	at := t.pos[0]
	if t.b[0] == '-' {
		p.errorf(at, "", "default options %q must directly follow the export path", string(t.b))
		return ClientRule{}, false
	}
	if i := slices.Index(t.b, '"'); i >= 0 {
		p.errorf(t.pos[i], "", "quotes are only allowed in the export path")
		return ClientRule{}, false
	}
	spec, specEnd := t.b, len(t.b)
	var opts *text
	if i := slices.Index(t.b, '('); i >= 0 {
		spec, specEnd = t.b[:i], i
		j := slices.Index(t.b[i:], ')')
		if j < 0 {
			p.errorf(t.pos[i], "no spaces are allowed inside the option list", "missing \")\" after the options of %q", string(spec))
			return ClientRule{}, false
		}
		j += i
		if j != len(t.b)-1 {
			p.errorf(t.pos[j+1], "separate clients with white space", "unexpected %q after \")\"", string(t.b[j+1:]))
			return ClientRule{}, false
		}
		opts = &text{t.b[i+1 : j], t.pos[i+1 : j]}
	} else if j := slices.Index(t.b, ')'); j >= 0 {
		p.errorf(t.pos[j], "", "unexpected \")\" without \"(\"")
		return ClientRule{}, false
	}

	var m matcher
	ok := true
	specStr := string(spec)
	if specEnd == 0 {
		p.warnf(at, fmt.Sprintf("write \"*%s\" to export to everyone, or remove the space before \"(\" if the options were meant for the client before", string(t.b)),
			"options with no client apply to every host")
		specStr = "*"
		m = matcher{kind: matchAny}
	} else {
		m, ok = p.spec(specStr, at)
	}
	st := def
	if opts != nil {
		n := len(p.errs)
		p.options(*opts, &st)
		ok = ok && len(p.errs) == n
	}
	if !ok {
		return ClientRule{}, false
	}
	return ClientRule{Spec: specStr, Options: st.final(), Pos: p.at(at), m: m}, true
}

var (
	flagOptions = []string{
		"ro", "rw", "sync", "async", "secure", "insecure",
		"root_squash", "no_root_squash", "all_squash", "no_all_squash",
	}
	valueOptions = []string{"anonuid", "anongid", "maxid", "fsid", "sec", "transports", "backend",
		"ceph_conf", "ceph_name", "ceph_keyring", "ceph_fs", "ceph_path", "ceph_fhkey"}
	// knfsd options that have no effect here, accepted and recorded.
	// The lock options concern NLM, which this server does not run.
	ignoredOptions = []string{
		"no_subtree_check", "subtree_check", "wdelay", "no_wdelay",
		"hide", "nohide", "crossmnt", "nocrossmnt", "no_acl", "acl",
		"secure_locks", "insecure_locks", "auth_nlm", "no_auth_nlm",
	}
	// knfsd options that would change behavior but are not implemented.
	unsupportedOptions = []string{
		"mountpoint", "mp", "refer", "replicas", "pnfs", "no_pnfs",
		"security_label", "nordirplus", "root_dir", "xprtsec",
	}
)

// options applies a comma-separated option list to st.
func (p *parser) options(t text, st *optState) {
	if len(t.b) == 0 {
		return
	}
	prevName := ""
	start := 0
	for i := 0; i <= len(t.b); i++ {
		if i < len(t.b) && t.b[i] != ',' {
			continue
		}
		item := text{t.b[start:i], t.pos[start:i]}
		var at lc
		if start < len(t.pos) {
			at = t.pos[start]
		} else {
			at = t.pos[len(t.pos)-1]
			at.col++
		}
		start = i + 1
		if len(item.b) == 0 {
			p.errorf(at, "", "empty option")
			prevName = ""
			continue
		}
		name, val, hasVal := strings.Cut(string(item.b), "=")
		valAt := at
		if hasVal {
			valAt.col += len(name) + 1
		}
		p.option(name, val, hasVal, at, valAt, st, prevName)
		prevName = name
	}
}

func (p *parser) option(name, val string, hasVal bool, at, valAt lc, st *optState, prev string) {
	o := &st.o
	if slices.Contains(flagOptions, name) || slices.Contains(ignoredOptions, name) {
		if hasVal {
			p.errorf(at, "", "option %q takes no value", name)
			return
		}
	} else if slices.Contains(valueOptions, name) && !hasVal {
		p.errorf(at, fmt.Sprintf("e.g. %q", valueExample(name)), "option %q needs a value", name)
		return
	}
	switch name {
	case "ro":
		o.ReadOnly = true
	case "rw":
		o.ReadOnly = false
	case "sync":
		o.Async = false
	case "async":
		o.Async = true
	case "secure":
		o.Insecure = false
	case "insecure":
		o.Insecure = true
	case "root_squash":
		st.rootSquash = true
	case "no_root_squash":
		st.rootSquash = false
	case "all_squash":
		st.allSquash = true
	case "no_all_squash":
		st.allSquash = false
	case "anonuid", "anongid":
		n, err := strconv.ParseUint(val, 10, 32)
		if err != nil || n == 1<<32-1 {
			p.errorf(valAt, "want a number from 0 to 4294967294", "invalid %s %q", name, val)
			return
		}
		if name == "anonuid" {
			o.AnonUID = uint32(n)
		} else {
			o.AnonGID = uint32(n)
		}
	case "maxid":
		n, err := strconv.ParseUint(val, 10, 32)
		if err != nil || n == 0 || n > DefaultMaxID {
			p.errorf(valAt, "want a number from 1 to 4294967294", "invalid maxid %q", val)
			return
		}
		o.MaxID = uint32(n)
	case "fsid":
		if val == "root" {
			o.FSID, o.FSIDSet = 0, true
			return
		}
		n, err := strconv.ParseUint(val, 10, 32)
		if err != nil {
			if looksLikeUUID(val) {
				p.errorf(valAt, "use a number, e.g. fsid=1", "fsid UUIDs are not supported")
			} else {
				p.errorf(valAt, "want a number from 0 to 4294967295, or root", "invalid fsid %q", val)
			}
			return
		}
		o.FSID, o.FSIDSet = uint32(n), true
	case "sec":
		var fl []uint32
		for _, v := range strings.Split(val, ":") {
			var f uint32
			switch v {
			case "sys":
				f = AuthSys
			case "none":
				f = AuthNone
			case "krb5", "krb5i", "krb5p", "lkey", "lkeyi", "lkeyp", "spkm3", "spkm3i", "spkm3p":
				p.errorf(valAt, "only sys and none are supported", "sec=%s is not supported", v)
				return
			default:
				p.errorf(valAt, didYouMean(v, []string{"sys", "none"}, "flavors are sys and none, separated by \":\""),
					"unknown security flavor %q", v)
				return
			}
			if !slices.Contains(fl, f) {
				fl = append(fl, f)
			}
			valAt.col += len(v) + 1
		}
		o.Flavors = fl
	case "transports":
		var ts TransportSet
		for _, v := range strings.Split(val, ":") {
			switch v {
			case "tcp":
				ts |= TransportsOf(TCP)
			case "rdma":
				ts |= TransportsOf(RDMA)
			default:
				p.errorf(valAt, didYouMean(v, []string{"tcp", "rdma"}, "transports are tcp and rdma, separated by \":\""),
					"unknown transport %q", v)
				return
			}
			valAt.col += len(v) + 1
		}
		o.Transports = ts
	case "backend":
		if val != BackendOS && val != BackendMem && val != BackendCephFS {
			p.errorf(valAt, didYouMean(val, []string{BackendOS, BackendMem, BackendCephFS}, "backends are os, mem and cephfs"), "unknown backend %q", val)
			return
		}
		o.Backend = val
	case "ceph_conf", "ceph_keyring", "ceph_fhkey":
		if !path.IsAbs(val) {
			p.errorf(valAt, "e.g. "+valueExample(name), "%s wants an absolute file name, not %q", name, val)
			return
		}
		*o.Ceph.field(name) = val
	case "ceph_path":
		if !path.IsAbs(val) || path.Clean(val) != val {
			p.errorf(valAt, "e.g. ceph_path=/volumes/data", "ceph_path wants a clean absolute path inside the file system, not %q", val)
			return
		}
		o.Ceph.Path = val
	case "ceph_name", "ceph_fs":
		if strings.HasPrefix(val, "client.") {
			p.errorf(valAt, "e.g. ceph_name=nfs for client.nfs", "ceph_name is the client name without \"client.\"")
			return
		}
		if !cephIdent(val) {
			p.errorf(valAt, "letters, digits, '.', '_' and '-'", "invalid %s %q", name, val)
			return
		}
		*o.Ceph.field(name) = val
	default:
		switch {
		case slices.Contains(ignoredOptions, name):
			if !slices.Contains(o.Ignored, name) {
				o.Ignored = append(o.Ignored, name)
			}
		case slices.Contains(unsupportedOptions, name):
			p.errorf(at, "", "option %q is not supported by this server", name)
		case (prev == "sec" && (name == "sys" || name == "none")) ||
			(prev == "transports" && (name == "tcp" || name == "rdma")):
			p.errorf(at, fmt.Sprintf(`separate %s values with ":", e.g. "%s"`, prev, valueExample(prev)),
				"unknown option %q", name)
		default:
			all := slices.Concat(flagOptions, valueOptions, ignoredOptions)
			p.errorf(at, didYouMean(name, all, ""), "unknown option %q", name)
		}
	}
}

func valueExample(name string) string {
	switch name {
	case "anonuid", "anongid":
		return name + "=65534"
	case "maxid":
		return "maxid=65535"
	case "fsid":
		return "fsid=1"
	case "sec":
		return "sec=sys:none"
	case "transports":
		return "transports=tcp:rdma"
	case "backend":
		return "backend=os"
	case "ceph_conf":
		return "ceph_conf=/etc/ceph/ceph.conf"
	case "ceph_keyring":
		return "ceph_keyring=/etc/ceph/ceph.client.nfs.keyring"
	case "ceph_fhkey":
		return "ceph_fhkey=/etc/gonfsrdma/cephfs.fhkey"
	case "ceph_name":
		return "ceph_name=nfs"
	case "ceph_fs":
		return "ceph_fs=cephfs"
	case "ceph_path":
		return "ceph_path=/volumes/data"
	}
	return name
}

// cephIdent: a Ceph client or file system name.
func cephIdent(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// looksLikeUUID reports whether s is hex digits with optional dashes,
// long enough to be meant as a UUID (knfsd takes 32 hex digits).
func looksLikeUUID(s string) bool {
	hex := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9', c >= 'a' && c <= 'f', c >= 'A' && c <= 'F':
			hex++
		case c == '-' || c == ':':
		default:
			return false
		}
	}
	return hex >= 8
}

// didYouMean suggests the closest candidate, at most one edit away for
// words of up to three letters and two edits for longer ones, or returns
// fallback.
func didYouMean(s string, cands []string, fallback string) string {
	limit := 2
	if len(s) <= 3 {
		limit = 1
	}
	best, bestD := "", limit+1
	for _, c := range cands {
		if d := editDistance(s, c); d < bestD {
			best, bestD = c, d
		}
	}
	if best == "" || s == "" {
		return fallback
	}
	return fmt.Sprintf("did you mean %q?", best)
}

// editDistance is editdist.Distance for option words; long strings just
// score badly (options are short), which bounds the work a hostile file
// can cause.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 64
	}
	return editdist.Distance(a, b)
}

// spec parses a client spec (not empty) into a matcher.
func (p *parser) spec(s string, at lc) (matcher, bool) {
	switch {
	case s == "*":
		return matcher{kind: matchAny}, true
	case s[0] == '@':
		p.errorf(at, "list the hosts, or use an address range", "netgroups are not supported")
		return matcher{}, false
	case strings.Contains(s, ","):
		p.errorf(at, `list each client separately: "a(opts) b(opts)"`, "invalid client %q", s)
		return matcher{}, false
	case strings.Contains(s, "/"):
		return p.prefix(s, at)
	case strings.Contains(s, ":") || strings.Trim(s, "0123456789.") == "":
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" {
			p.errorf(at, "", "invalid address %q", s)
			return matcher{}, false
		}
		a = a.Unmap()
		return matcher{kind: matchPrefix, prefix: netip.PrefixFrom(a, a.BitLen())}, true
	}
	return p.hostname(s, at)
}

// prefix parses "addr/bits" and "addr/netmask".
func (p *parser) prefix(s string, at lc) (matcher, bool) {
	as, ms, _ := strings.Cut(s, "/")
	a, err := netip.ParseAddr(as)
	if err != nil || a.Zone() != "" {
		p.errorf(at, "", "invalid address %q in %q", as, s)
		return matcher{}, false
	}
	var bits int
	if ms != "" && strings.Trim(ms, "0123456789") == "" {
		bits, err = strconv.Atoi(ms)
		if err != nil || bits > a.BitLen() || len(ms) > 3 {
			p.errorf(at, fmt.Sprintf("%s allows 0 to %d", family(a), a.BitLen()), "invalid prefix length %q in %q", ms, s)
			return matcher{}, false
		}
	} else {
		mask, err := netip.ParseAddr(ms)
		if err != nil || mask.Zone() != "" || mask.Is4() != a.Is4() {
			p.errorf(at, "write a prefix length or a netmask of the same family, e.g. 10.0.0.0/8 or 10.0.0.0/255.0.0.0",
				"invalid netmask %q in %q", ms, s)
			return matcher{}, false
		}
		var ok bool
		if bits, ok = maskBits(mask); !ok {
			p.errorf(at, "", "netmask %s is not contiguous", ms)
			return matcher{}, false
		}
	}
	if a.Is4In6() && bits >= 96 {
		a, bits = a.Unmap(), bits-96
	}
	pf := netip.PrefixFrom(a, bits)
	if m := pf.Masked(); m != pf {
		p.warnf(at, fmt.Sprintf("write %s", m), "%s has host bits set; it means %s", s, m)
		pf = m
	}
	return matcher{kind: matchPrefix, prefix: pf}, true
}

func family(a netip.Addr) string {
	if a.Is4() {
		return "IPv4"
	}
	return "IPv6"
}

// maskBits returns the prefix length of a contiguous netmask.
func maskBits(m netip.Addr) (int, bool) {
	b := m.AsSlice()
	bits, ended := 0, false
	for _, x := range b {
		for i := 7; i >= 0; i-- {
			if x&(1<<i) != 0 {
				if ended {
					return 0, false
				}
				bits++
			} else {
				ended = true
			}
		}
	}
	return bits, true
}

// hostname parses a host name or a name pattern; plain names are
// resolved now.
func (p *parser) hostname(s string, at lc) (matcher, bool) {
	name := normName(s)
	wild := false
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '.', c == '_':
		case c == '*', c == '?', c == '[', c == ']', c == '!', c == '^':
			wild = true
		default:
			p.errorf(at, "", "invalid client %q: %q is not allowed in a host name", s, string(rune(c)))
			return matcher{}, false
		}
	}
	if name == "" || len(name) > 253 || strings.Contains(name, "..") ||
		name[0] == '.' || name[0] == '-' || name[len(name)-1] == '.' {
		p.errorf(at, "", "invalid host name %q", s)
		return matcher{}, false
	}
	if !wild {
		m := matcher{kind: matchHost, name: name}
		r, seen := p.resolve[name]
		if !seen {
			ctx, cancel := context.WithTimeout(context.Background(), loadLookupTimeout)
			r.addrs, r.err = p.res.LookupNetIP(ctx, "ip", name)
			cancel()
			for i, a := range r.addrs {
				r.addrs[i] = a.Unmap().WithZone("")
			}
			if r.err == nil && len(r.addrs) == 0 {
				r.err = errors.New("no addresses")
			}
			p.resolve[name] = r
		}
		if r.err != nil {
			p.warnf(at, "the rule matches no client until the file is reloaded", "cannot resolve host %q: %v", s, r.err)
			m.unknown = true
		}
		m.addrs = r.addrs
		return m, true
	}
	if strings.Trim(name, "0123456789.*?") == "" && strings.Trim(name, ".*?") != "" {
		p.errorf(at, ipWildcardHint(name), "wildcards do not work in IP addresses")
		return matcher{}, false
	}
	// fnmatch's "[!...]" is path.Match's "[^...]".
	pat := strings.ReplaceAll(name, "[!", "[^")
	if _, err := path.Match(pat, ""); err != nil {
		p.errorf(at, "", "invalid host name pattern %q", s)
		return matcher{}, false
	}
	if p.rev == nil {
		p.rev = newRevCache(p.res)
	}
	return matcher{kind: matchWildcard, name: pat}, true
}

// ipWildcardHint turns "10.1.*" into a suggestion "use 10.1.0.0/16".
func ipWildcardHint(s string) string {
	parts := strings.Split(s, ".")
	if len(parts) >= 2 && len(parts) <= 4 && parts[len(parts)-1] == "*" {
		oct := parts[:len(parts)-1]
		for _, o := range oct {
			if n, err := strconv.Atoi(o); err != nil || n > 255 {
				return "use a CIDR such as 10.0.0.0/24"
			}
		}
		bits := 8 * len(oct)
		for len(oct) < 4 {
			oct = append(oct, "0")
		}
		return fmt.Sprintf("use %s/%d", strings.Join(oct, "."), bits)
	}
	return "use a CIDR such as 10.0.0.0/24"
}
