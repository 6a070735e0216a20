package exports_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/gonfsrdma/gonfsrdma/exports"
)

// fakeResolver answers from maps and counts calls.
type fakeResolver struct {
	fwd map[string][]string // name -> addresses
	rev map[string][]string // address -> names

	mu              sync.Mutex
	nFwd, nRev      int
	fwdNames, revAs []string
}

func (f *fakeResolver) LookupNetIP(_ context.Context, network, host string) ([]netip.Addr, error) {
	f.mu.Lock()
	f.nFwd++
	f.fwdNames = append(f.fwdNames, host)
	f.mu.Unlock()
	if network != "ip" {
		return nil, fmt.Errorf("unexpected network %q", network)
	}
	as, ok := f.fwd[host]
	if !ok {
		return nil, errors.New("no such host")
	}
	var out []netip.Addr
	for _, a := range as {
		out = append(out, netip.MustParseAddr(a))
	}
	return out, nil
}

func (f *fakeResolver) LookupAddr(_ context.Context, addr string) ([]string, error) {
	f.mu.Lock()
	f.nRev++
	f.revAs = append(f.revAs, addr)
	f.mu.Unlock()
	ns, ok := f.rev[addr]
	if !ok {
		return nil, errors.New("no PTR")
	}
	return ns, nil
}

func (f *fakeResolver) counts() (fwd, rev int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.nFwd, f.nRev
}

// testResolver knows a few hosts of a lab.
func testResolver() *fakeResolver {
	return &fakeResolver{
		fwd: map[string][]string{
			"alpha.lab.example":   {"192.0.2.10"},
			"beta.lab.example":    {"192.0.2.11", "2001:db8::11"},
			"gamma.other.example": {"198.51.100.7"},
			"liar.evil.example":   {"203.0.113.66"},
			"node1.hpc.example":   {"192.0.2.21"},
		},
		rev: map[string][]string{
			"192.0.2.10":   {"alpha.lab.example."},
			"192.0.2.11":   {"beta.lab.example."},
			"2001:db8::11": {"beta.lab.example."},
			"198.51.100.7": {"gamma.other.example."},
			// PTR claims a lab name, but the name does not resolve back.
			"203.0.113.99": {"alpha.lab.example."},
			"192.0.2.21":   {"Node1.HPC.example."},
		},
	}
}

// dirs is a fake StatDir: only the listed paths are directories.
func dirs(paths ...string) func(string) error {
	return func(p string) error {
		for _, d := range paths {
			if d == p {
				return nil
			}
		}
		if p == "/etc/passwd" {
			return errors.New("not a directory")
		}
		return &fs.PathError{Op: "stat", Path: p, Err: fs.ErrNotExist}
	}
}

// anyDir accepts every path.
func anyDir(string) error { return nil }

func parse(t testing.TB, in string) (*exports.Table, []exports.Warning, error) {
	t.Helper()
	return exports.Parse("exports", strings.NewReader(in), exports.ParseOptions{Resolver: testResolver(), StatDir: anyDir})
}

func mustParse(t testing.TB, in string) *exports.Table {
	t.Helper()
	tab, _, err := parse(t, in)
	if err != nil {
		t.Fatalf("Parse(%q): %v", in, err)
	}
	return tab
}

func render(t testing.TB, tab *exports.Table) string {
	t.Helper()
	var b bytes.Buffer
	if err := exports.WriteTable(&b, tab); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
