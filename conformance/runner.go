package conformance

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gonfsrdma/gonfsrdma/nfs/client"
	"github.com/gonfsrdma/gonfsrdma/nfs/mount"
	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/oncrpc/rpcbind"
	rdmaclient "github.com/gonfsrdma/gonfsrdma/rpcrdma/client"
	"github.com/gonfsrdma/gonfsrdma/verbs"
)

// BaseTree is the directory in the export root below which every test gets
// its scratch directory.
const BaseTree = "gonfsrdma-conformance"

// Default ports.
const (
	DefaultPortmapPort = 111
	DefaultRDMAPort    = 20049
)

// Config is what a run needs. Zero fields take defaults.
type Config struct {
	Server      string // host name or address
	Export      string // exported path, as MNT wants it
	Transport   string // "tcp" (default) or "rdma"
	Port        int    // NFS port; 0: ask rpcbind (tcp) or 20049 (rdma)
	TCPPort     int    // NFS over TCP port for the raw RPC tests; 0: Port on tcp, else ask rpcbind
	MountPort   int    // MOUNT port; 0: ask rpcbind
	PortmapPort int    // rpcbind port; 0: 111
	MakeTree    bool   // remove and recreate BaseTree before the tests
	UID, GID    uint32 // AUTH_SYS identity of the test client
	Select      []string
	// TestTimeout bounds each test; 0: 30 seconds.
	TestTimeout time.Duration
	// DialNFS, when set, connects to NFS over a transport the package does
	// not know (RPC-over-RDMA); addr is Server:Port.
	DialNFS func(ctx context.Context, addr string) (oncrpc.Caller, error)
	// DialRDMA, when set, opens an RPC-over-RDMA client connection for the
	// rdma tests' hand-built transport headers; addr is Server:Port.
	DialRDMA func(ctx context.Context, addr string, cfg rdmaclient.Config) (*rdmaclient.Client, error)
	// DialVerbs, when set, opens a bare verbs connection with the given
	// parameters (chosen CM private data); addr is Server:Port.
	DialVerbs func(ctx context.Context, addr string, p verbs.ConnParams) (verbs.Conn, error)
	// CallbackPortmap is the address of an rpcbind that the server asks
	// for this client's NLM and NSM (the server's callbacks: GRANTED_MSG,
	// _RES, SM_NOTIFY); the suite registers its own callback service
	// there. "host:port" is reached over TCP, a path (the system
	// rpcbind's /run/rpcbind.sock) over its local socket. "" omits the
	// tests that need callbacks.
	CallbackPortmap string
	// Grace is the server's grace period; 0 omits the grace tests, which
	// start one with SM_SIMU_CRASH (allowed from loopback).
	Grace time.Duration
	// ROExport is a second export that is read-only to this client and
	// holds at least one regular file; "" omits the rofs tests.
	ROExport string
	// Strict is the profile that judges gonfsrdma itself. The default
	// (tolerant) profile judges any server: where the RFCs allow several
	// answers it accepts each, and an answer that is allowed but unusual
	// is a WARN. The strict profile wants the one answer gonfsrdma gives
	// (its reading of the RFC, knfsd's answer where the RFC leaves a
	// choice) and turns every WARN whose code is not in AllowWarn into a
	// FAIL.
	Strict bool
	// AllowWarn, under Strict, maps the codes of tests allowed to WARN to
	// the reason why (ParseAllowList reads them from a file).
	AllowWarn map[string]string
}

// Status is a test outcome.
type Status int

// Outcomes.
const (
	Pass Status = iota
	Fail
	Warn
	Omit
)

func (s Status) String() string {
	switch s {
	case Pass:
		return "PASS"
	case Fail:
		return "FAIL"
	case Warn:
		return "WARN"
	case Omit:
		return "OMIT"
	}
	return "Status(" + strconv.Itoa(int(s)) + ")"
}

// MarshalText implements encoding.TextMarshaler (JSON output).
func (s Status) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Test is one entry of the static table. Run returns nil for PASS, an
// error made by Warnf for WARN and any other error for FAIL(reason).
type Test struct {
	Code  string
	Name  string
	Flags []string
	Deps  []string
	Doc   string // one line, citing the RFC section checked
	Run   func(e *Env) error
}

// WarnError is a WARN outcome: the server is allowed to behave so but
// probably should not.
type WarnError struct{ Reason string }

func (w *WarnError) Error() string { return w.Reason }

// Warnf returns a WARN outcome.
func Warnf(format string, args ...any) error {
	return &WarnError{Reason: fmt.Sprintf(format, args...)}
}

// Result is one test's outcome.
type Result struct {
	Code     string        `json:"code"`
	Name     string        `json:"name"`
	Doc      string        `json:"doc"`
	Status   Status        `json:"status"`
	Reason   string        `json:"reason,omitempty"`
	Duration time.Duration `json:"duration_ns"`
}

// Summary is a whole run.
type Summary struct {
	Passed  int      `json:"passed"`
	Failed  int      `json:"failed"`
	Warned  int      `json:"warned"`
	Omitted int      `json:"omitted"`
	Results []Result `json:"results"`
}

// Line is the closing line of a run.
func (s *Summary) Line() string {
	return fmt.Sprintf("%d passed, %d failed, %d warned, %d omitted", s.Passed, s.Failed, s.Warned, s.Omitted)
}

// Env is what a test gets. Everything in it belongs to the test while it
// runs.
type Env struct {
	Ctx         context.Context
	Cfg         *Config
	NFSAddr     string // host:port of NFS on Cfg.Transport
	RPCAddr     string // host:port of NFS over TCP, for the raw ONC RPC tests
	MountAddr   string // host:port of MOUNT over TCP
	PortmapAddr string // host:port of rpcbind
	C           *client.Client
	Root        []byte // export root handle
	RORoot      []byte // root handle of Cfg.ROExport, nil without one
	Base        []byte // BaseTree handle
	Dir         []byte // this test's fresh scratch directory
	DirName     string // its name in BaseTree
	Cred        oncrpc.OpaqueAuth
	dial        func(ctx context.Context) (oncrpc.Caller, error)
	// rsize and wsize are the server's FSINFO rtmax and wtmax: the
	// helpers never send a larger READ or WRITE.
	rsize, wsize uint32
	// lock is the lock tests' shared state (ports, callback service).
	lock *lockEnv
}

// Dial opens a new NFS connection with the suite's credential; the caller
// closes it.
func (e *Env) Dial() (*client.Client, error) {
	c, err := e.dial(e.Ctx)
	if err != nil {
		return nil, err
	}
	nc := client.New(c).WithCred(e.Cred)
	nc.SetIOSize(e.rsize, e.wsize)
	return nc, nil
}

// DialRaw opens a TCP ONC RPC connection to addr for malformed calls.
func (e *Env) DialRaw(addr string) (*oncrpc.Client, error) {
	c, err := oncrpc.Dial(e.Ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	c.SetCred(e.Cred)
	return c, nil
}

// ShowFlags writes every flag with the number of tests carrying it.
func ShowFlags(w io.Writer) {
	n := map[string]int{}
	for _, t := range Tests() {
		for _, f := range t.Flags {
			n[f]++
		}
	}
	names := make([]string, 0, len(n))
	for f := range n {
		names = append(names, f)
	}
	sort.Strings(names)
	for _, f := range names {
		fmt.Fprintf(w, "%-10s %d\n", f, n[f])
	}
}

// ShowCodes writes every test: code, name, flags, dependencies, description.
func ShowCodes(w io.Writer) {
	for _, t := range Tests() {
		deps := ""
		if len(t.Deps) > 0 {
			deps = " deps=" + strings.Join(t.Deps, ",")
		}
		fmt.Fprintf(w, "%-8s %-28s [%s]%s\n         %s\n", t.Code, t.Name, strings.Join(t.Flags, ","), deps, t.Doc)
	}
}

// Selected returns the tests sel names (by code or flag; empty means
// "all") and their dependencies, in table order. Unknown names are an
// error.
func Selected(sel []string) ([]Test, error) {
	all := Tests()
	byCode := make(map[string]int, len(all))
	for i, t := range all {
		byCode[t.Code] = i
	}
	if len(sel) == 0 {
		sel = []string{"all"}
	}
	want := make([]bool, len(all))
	var mark func(i int)
	mark = func(i int) {
		if want[i] {
			return
		}
		want[i] = true
		for _, d := range all[i].Deps {
			if j, ok := byCode[d]; ok {
				mark(j)
			}
		}
	}
	for _, s := range sel {
		found := false
		if i, ok := byCode[strings.ToUpper(s)]; ok {
			mark(i)
			found = true
		}
		for i, t := range all {
			for _, f := range t.Flags {
				if f == strings.ToLower(s) {
					mark(i)
					found = true
				}
			}
		}
		if !found {
			return nil, fmt.Errorf("conformance: no test code or flag %q (see --showcodes, --showflags)", s)
		}
	}
	var out []Test
	for i, t := range all {
		if want[i] {
			out = append(out, t)
		}
	}
	return out, nil
}

func hasFlag(t *Test, f string) bool {
	for _, g := range t.Flags {
		if g == f {
			return true
		}
	}
	return false
}

// Run connects to the server, runs the selected tests and prints one line
// per test and the closing count to out. The error reports a setup failure
// (no test ran); test failures are in the Summary.
func Run(ctx context.Context, cfg Config, out io.Writer) (Summary, error) {
	var sum Summary
	tests, err := Selected(cfg.Select)
	if err != nil {
		return sum, err
	}
	e, cleanup, err := setup(ctx, &cfg)
	if err != nil {
		return sum, err
	}
	defer cleanup()
	timeout := cfg.TestTimeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	done := map[string]Status{}
	for i := range tests {
		t := &tests[i]
		r := Result{Code: t.Code, Name: t.Name, Doc: t.Doc}
		start := time.Now()
		if reason := omitReason(t, &cfg, done); reason != "" {
			r.Status, r.Reason = Omit, reason
		} else {
			r.Status, r.Reason = runOne(ctx, e, t, timeout)
			if cfg.Strict && r.Status == Warn {
				if why, ok := cfg.AllowWarn[t.Code]; ok {
					r.Reason += " (allowed: " + why + ")"
				} else {
					r.Status, r.Reason = Fail, "strict profile: a WARN not in the allow-list: "+r.Reason
				}
			}
		}
		r.Duration = time.Since(start)
		done[t.Code] = r.Status
		switch r.Status {
		case Pass:
			sum.Passed++
		case Fail:
			sum.Failed++
		case Warn:
			sum.Warned++
		case Omit:
			sum.Omitted++
		}
		sum.Results = append(sum.Results, r)
		fmt.Fprintln(out, r.Line())
	}
	fmt.Fprintln(out, sum.Line())
	return sum, nil
}

// Line is the per-test output line.
func (r *Result) Line() string {
	s := fmt.Sprintf("%s %s : %s", r.Code, r.Name, r.Status)
	if r.Reason != "" {
		s += "\n    " + r.Reason
	}
	return s
}

func omitReason(t *Test, cfg *Config, done map[string]Status) string {
	if hasFlag(t, "rdma") && cfg.Transport != "rdma" {
		return "needs --transport rdma"
	}
	if hasFlag(t, "rdma") && cfg.DialRDMA == nil {
		return "no raw RPC-over-RDMA dialer (Config.DialRDMA)"
	}
	if hasFlag(t, "verbs") && cfg.DialVerbs == nil {
		return "no verbs dialer (Config.DialVerbs)"
	}
	if hasFlag(t, "rofs") && cfg.ROExport == "" {
		return "needs --roexport"
	}
	if hasFlag(t, "callback") && cfg.CallbackPortmap == "" {
		return "needs --callback-rpcbind (an rpcbind the server asks for this client's NLM)"
	}
	if hasFlag(t, "grace") && cfg.Grace <= 0 {
		return "needs --grace (the server's grace period)"
	}
	for _, d := range t.Deps {
		if st, ok := done[d]; ok && st != Pass && st != Warn {
			return "dependency " + d + " " + st.String()
		}
	}
	return ""
}

// runOne runs a test in a fresh scratch directory, turning a panic into a
// FAIL so that one broken test does not end the run.
func runOne(ctx context.Context, base *Env, t *Test, timeout time.Duration) (st Status, reason string) {
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	e := *base
	e.Ctx = tctx
	defer func() {
		if p := recover(); p != nil {
			st, reason = Fail, fmt.Sprintf("panic: %v", p)
		}
	}()
	e.DirName = t.Code
	if err := rmTree(tctx, e.C, e.Base, e.DirName); err != nil {
		return Fail, "cleaning scratch directory: " + err.Error()
	}
	res, err := e.C.Mkdir(tctx, e.Base, e.DirName, wire.Sattr{Mode: wire.SetUint32{Set: true, V: 0o777}})
	if err != nil {
		return Fail, "creating scratch directory: " + err.Error()
	}
	e.Dir = res.FH.FH
	if err := t.Run(&e); err != nil {
		var w *WarnError
		if errors.As(err, &w) {
			return Warn, w.Reason
		}
		return Fail, err.Error()
	}
	return Pass, ""
}

func hostPort(host string, port int) string { return net.JoinHostPort(host, strconv.Itoa(port)) }

// setup resolves ports, mounts the export, connects to NFS and prepares
// the base tree.
func setup(ctx context.Context, cfg *Config) (*Env, func(), error) {
	if cfg.Transport == "" {
		cfg.Transport = "tcp"
	}
	if cfg.Transport != "tcp" && cfg.Transport != "rdma" {
		return nil, nil, fmt.Errorf("conformance: unknown transport %q", cfg.Transport)
	}
	if cfg.Transport == "rdma" && cfg.DialNFS == nil {
		return nil, nil, errors.New("conformance: --transport rdma needs an RPC-over-RDMA dialer")
	}
	if cfg.PortmapPort == 0 {
		cfg.PortmapPort = DefaultPortmapPort
	}
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	e := &Env{Cfg: cfg, PortmapAddr: hostPort(cfg.Server, cfg.PortmapPort)}
	e.Cred = oncrpc.NewAuthSys("conformance", cfg.UID, cfg.GID)
	port, mport, tport := cfg.Port, cfg.MountPort, cfg.TCPPort
	if cfg.Transport == "rdma" && port == 0 {
		port = DefaultRDMAPort
	}
	if cfg.Transport != "rdma" && tport == 0 {
		tport = port
	}
	if port == 0 || mport == 0 || tport == 0 {
		pm, err := oncrpc.Dial(sctx, "tcp", e.PortmapAddr)
		if err != nil {
			return nil, nil, fmt.Errorf("conformance: no port given and rpcbind unreachable: %w", err)
		}
		if port == 0 || tport == 0 {
			p, err := rpcbind.GetPort(sctx, pm, wire.Program, wire.Version, 6)
			if err != nil || p == 0 {
				pm.Close()
				return nil, nil, fmt.Errorf("conformance: rpcbind knows no NFSv3/TCP port (%v); pass --port", err)
			}
			if port == 0 {
				port = int(p)
			}
			if tport == 0 {
				tport = int(p)
			}
		}
		if mport == 0 {
			p, err := rpcbind.GetPort(sctx, pm, mount.Prog, mount.Vers3, 6)
			if err != nil || p == 0 {
				pm.Close()
				return nil, nil, fmt.Errorf("conformance: rpcbind knows no MOUNTv3/TCP port (%v); pass --mountport", err)
			}
			mport = int(p)
		}
		pm.Close()
	}
	e.NFSAddr, e.MountAddr, e.RPCAddr = hostPort(cfg.Server, port), hostPort(cfg.Server, mport), hostPort(cfg.Server, tport)
	e.dial = func(ctx context.Context) (oncrpc.Caller, error) {
		if cfg.DialNFS != nil {
			return cfg.DialNFS(ctx, e.NFSAddr)
		}
		return oncrpc.Dial(ctx, "tcp", e.NFSAddr)
	}

	mc, err := oncrpc.Dial(sctx, "tcp", e.MountAddr)
	if err != nil {
		return nil, nil, fmt.Errorf("conformance: MOUNT: %w", err)
	}
	mc.SetCred(e.Cred)
	root, _, err := mount.Mnt(sctx, mc, cfg.Export)
	if err == nil && cfg.ROExport != "" {
		e.RORoot, _, err = mount.Mnt(sctx, mc, cfg.ROExport)
		if err != nil {
			err = fmt.Errorf("read-only export %s: %w", cfg.ROExport, err)
		}
	}
	if err == nil {
		// NFSv3 handles outlive the mount: take the suite's own entries
		// off the server's mount list again, so the MOUNT tests see only
		// their own (mountd counts repeated MNTs of one client and path).
		mount.Umnt(sctx, mc, cfg.Export)
		if cfg.ROExport != "" {
			mount.Umnt(sctx, mc, cfg.ROExport)
		}
	}
	mc.Close()
	if err != nil {
		return nil, nil, fmt.Errorf("conformance: MNT %s: %w", cfg.Export, err)
	}
	e.Root = root
	caller, err := e.dial(sctx)
	if err != nil {
		return nil, nil, fmt.Errorf("conformance: NFS: %w", err)
	}
	e.C = client.New(caller).WithCred(e.Cred)
	e.lock = &lockEnv{}
	cleanup := func() {
		caller.Close()
		e.lock.close()
	}
	if fi, err := e.C.Fsinfo(sctx, root); err == nil {
		e.rsize, e.wsize = fi.RTMax, fi.WTMax
		e.C.SetIOSize(e.rsize, e.wsize)
	}

	if cfg.MakeTree {
		if err := rmTree(sctx, e.C, root, BaseTree); err != nil {
			cleanup()
			return nil, nil, fmt.Errorf("conformance: removing %s: %w", BaseTree, err)
		}
		if _, err := e.C.Mkdir(sctx, root, BaseTree, wire.Sattr{Mode: wire.SetUint32{Set: true, V: 0o777}}); err != nil {
			cleanup()
			return nil, nil, fmt.Errorf("conformance: creating %s: %w", BaseTree, err)
		}
	}
	res, err := e.C.Lookup(sctx, root, BaseTree)
	if err != nil {
		cleanup()
		return nil, nil, fmt.Errorf("conformance: no %s in the export (run with --maketree): %w", BaseTree, err)
	}
	e.Base = res.FH
	return e, cleanup, nil
}

// ParseAllowList reads the strict profile's allow-list: one test code per
// line followed by the reason it may WARN; blank lines and lines starting
// with # are skipped. A code that is not in the table, a repeated code or
// a code without a reason is an error.
func ParseAllowList(r io.Reader) (map[string]string, error) {
	known := map[string]bool{}
	for _, t := range Tests() {
		known[t.Code] = true
	}
	out := map[string]string{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		code, why, _ := strings.Cut(line, " ")
		why = strings.TrimSpace(why)
		switch {
		case !known[code]:
			return nil, fmt.Errorf("conformance: allow-list line %d: no test %q", n, code)
		case why == "":
			return nil, fmt.Errorf("conformance: allow-list line %d: %s has no reason", n, code)
		case out[code] != "":
			return nil, fmt.Errorf("conformance: allow-list line %d: %s listed twice", n, code)
		}
		out[code] = why
	}
	return out, sc.Err()
}

// rmTree removes dir/name and everything below it; a missing name is fine.
func rmTree(ctx context.Context, c *client.Client, dir []byte, name string) error {
	res, err := c.Lookup(ctx, dir, name)
	if errors.Is(err, client.ErrNoEnt) {
		return nil
	}
	if err != nil {
		return err
	}
	if res.ObjAttr.Set && res.ObjAttr.Attr.Type != wire.TypeDir {
		_, err := c.Remove(ctx, dir, name)
		return err
	}
	ents, err := c.ReaddirAll(ctx, res.FH, 8192)
	if errors.Is(err, client.ErrNotDir) {
		_, err := c.Remove(ctx, dir, name)
		return err
	}
	if err != nil {
		return err
	}
	for _, en := range ents {
		if en.Name == "." || en.Name == ".." {
			continue
		}
		if err := rmTree(ctx, c, res.FH, en.Name); err != nil {
			return err
		}
	}
	_, err = c.Rmdir(ctx, dir, name)
	return err
}
