package exports_test

import (
	"bytes"
	"errors"
	"flag"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gonfsrdma/gonfsrdma/exports"
)

var update = flag.Bool("update", false, "rewrite testdata/*.out")

func TestWriteTableGolden(t *testing.T) {
	in, err := os.ReadFile("testdata/golden.exports")
	if err != nil {
		t.Fatal(err)
	}
	tab, warns, err := exports.Parse("golden.exports", bytes.NewReader(in), exports.ParseOptions{
		Resolver: testResolver(),
		StatDir:  dirs("/srv/data", "/srv/home", "/srv/with space", "/srv/oct#al name"),
	})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := exports.WriteTable(&out, tab); err != nil {
		t.Fatal(err)
	}
	out.WriteString("# warnings\n")
	for _, w := range warns {
		out.WriteString("# " + w.String() + "\n")
	}
	const golden = "testdata/golden.out"
	if *update {
		if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Errorf("WriteTable output differs from %s (run with -update to accept):\n%s", golden, out.String())
	}
}

// WriteTable's output is an exports file that parses to the same table.
func TestWriteTableRoundTrip(t *testing.T) {
	inputs := []string{}
	for _, tc := range validCases {
		inputs = append(inputs, tc.in)
	}
	golden, err := os.ReadFile("testdata/golden.exports")
	if err != nil {
		t.Fatal(err)
	}
	inputs = append(inputs, string(golden), "/a\\001b\\177\\134\\042 *")
	for _, in := range inputs {
		checkRoundTrip(t, in)
	}
}

func checkRoundTrip(t testing.TB, in string) {
	t.Helper()
	opts := exports.ParseOptions{Resolver: testResolver(), StatDir: anyDir}
	tab, _, err := exports.Parse("in", strings.NewReader(in), opts)
	if err != nil {
		return
	}
	first := render(t, tab)
	tab2, _, err := exports.Parse("out", strings.NewReader(first), opts)
	if err != nil {
		t.Fatalf("WriteTable output does not parse: %v\ninput:\n%q\noutput:\n%s", err, in, first)
	}
	// Ignored options are shown only in comments, so they do not survive.
	if second := render(t, tab2); second != stripIgnored(first) {
		t.Fatalf("round trip changed the table\ninput:\n%q\nfirst:\n%s\nsecond:\n%s", in, first, second)
	}
	for i, e := range tab.Exports {
		if e2 := tab2.Exports[i]; e2.Path != e.Path {
			t.Fatalf("path %q became %q", e.Path, e2.Path)
		}
	}
}

func TestLookupAndGroups(t *testing.T) {
	tab := mustParse(t, "/srv/data 10.0.0.0/8(rw) *.lab.example 10.0.0.0/8(ro) (all_squash)\n/srv 192.0.2.1\n")
	for _, p := range []string{"/srv/data", "/srv/data/", "//srv//data", "/srv/x/../data"} {
		if e := tab.Lookup(p); e == nil || e.Path != "/srv/data" {
			t.Errorf("Lookup(%q) = %v", p, e)
		}
	}
	for _, p := range []string{"/srv/data/sub", "/sr", "/", ""} {
		if e := tab.Lookup(p); e != nil {
			t.Errorf("Lookup(%q) = %s, want nil (no inheritance)", p, e.Path)
		}
	}
	if g := tab.Lookup("/srv/data").Groups(); !slices.Equal(g, []string{"10.0.0.0/8", "*.lab.example", "*"}) {
		t.Errorf("Groups = %q", g)
	}
	if g := tab.Lookup("/srv").Groups(); !slices.Equal(g, []string{"192.0.2.1"}) {
		t.Errorf("Groups = %q", g)
	}
}

func TestDefault(t *testing.T) {
	tab, err := exports.Default("/srv/data/")
	if err != nil {
		t.Fatal(err)
	}
	want := "/srv/data  127.0.0.0/8(rw,sync,insecure,root_squash,anonuid=65534,anongid=65534,fsid=1,sec=sys,transports=tcp:rdma,backend=os) \\\n" +
		"           ::1(rw,sync,insecure,root_squash,anonuid=65534,anongid=65534,fsid=1,sec=sys,transports=tcp:rdma,backend=os)\n"
	if got := render(t, tab); got != want {
		t.Errorf("got\n%swant\n%s", got, want)
	}
	e := tab.Lookup("/srv/data")
	for _, c := range []struct {
		addr string
		ok   bool
	}{{"127.0.0.1", true}, {"127.1.2.3", true}, {"::1", true}, {"::ffff:127.0.0.1", true}, {"10.0.0.1", false}, {"::2", false}} {
		if _, ok := e.Match(netip.MustParseAddr(c.addr)); ok != c.ok {
			t.Errorf("Match(%s) = %v, want %v", c.addr, ok, c.ok)
		}
	}
	if g := e.Groups(); !slices.Equal(g, []string{"127.0.0.0/8", "::1"}) {
		t.Errorf("Groups = %q", g)
	}
	if _, err := exports.Default("srv"); err == nil {
		t.Error("Default accepted a relative path")
	}
}

func TestHolder(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "exports")
	h := exports.NewHolder(nil, exports.ParseOptions{Resolver: testResolver(), StatDir: anyDir})
	if h.Load() != nil {
		t.Fatal("new holder has a table")
	}
	if _, err := h.Reload(filepath.Join(dir, "missing")); err == nil || h.Load() != nil {
		t.Fatal("reload of a missing file")
	}

	writeFile(t, name, "/srv 10.0.0.0/8(ro)\n")
	if _, err := h.Reload(name); err != nil {
		t.Fatal(err)
	}
	old := h.Load()
	a := netip.MustParseAddr("10.1.1.1")
	if r, ok := old.Lookup("/srv").Match(a); !ok || !r.Options.ReadOnly {
		t.Fatal("first table")
	}

	// A bad file keeps the old table and reports every error.
	writeFile(t, name, "/srv 10.0.0.0/8(rw2)\n/other *(bogus)\n")
	_, err := h.Reload(name)
	var el exports.ErrorList
	if !errors.As(err, &el) || len(el) != 2 {
		t.Fatalf("reload of a bad file: %v", err)
	}
	if h.Load() != old {
		t.Fatal("the old table was replaced by a bad file")
	}

	// A good change applies to the next Load; warnings come back.
	writeFile(t, name, "/srv 10.0.0.0/8(rw) nosuch.example\n")
	warns, err := h.Reload(name)
	if err != nil || len(warns) != 1 {
		t.Fatalf("reload: %v, warnings %v", err, warns)
	}
	if r, ok := h.Load().Lookup("/srv").Match(a); !ok || r.Options.ReadOnly {
		t.Fatal("the new option did not apply")
	}
	// The table a caller already took is unchanged.
	if r, _ := old.Lookup("/srv").Match(a); !r.Options.ReadOnly {
		t.Fatal("the old table changed")
	}

	h.Set(old)
	if h.Load() != old {
		t.Fatal("Set")
	}
	var zero exports.Holder
	if zero.Load() != nil {
		t.Fatal("zero Holder has a table")
	}
}

// Readers never see a torn table while reloads run (run with -race).
func TestHolderConcurrent(t *testing.T) {
	dir := t.TempDir()
	ro, rw := filepath.Join(dir, "ro"), filepath.Join(dir, "rw")
	writeFile(t, ro, "/srv *(ro)\n")
	writeFile(t, rw, "/srv *(rw)\n")
	h := exports.NewHolder(nil, exports.ParseOptions{StatDir: anyDir})
	if _, err := h.Reload(ro); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			a := netip.MustParseAddr("192.0.2.1")
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, ok := h.Load().Lookup("/srv").Match(a); !ok {
					t.Error("no match")
					return
				}
			}
		})
	}
	for i := range 50 {
		f := ro
		if i%2 == 1 {
			f = rw
		}
		if _, err := h.Reload(f); err != nil {
			t.Error(err)
		}
	}
	close(stop)
	wg.Wait()
}

var ignoredNote = regexp.MustCompile(`(  # |; )ignored: [a-z_,]+`)

func stripIgnored(s string) string { return ignoredNote.ReplaceAllString(s, "") }
