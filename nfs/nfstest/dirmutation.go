package nfstest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gonfsrdma/gonfsrdma/nfs/client"
	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
)

// DirMutationCases list a directory of n long names through the NFS
// client with small READDIR and READDIRPLUS counts while they change it
// between calls, as `rm -rf` and other tree walkers do: every entry that
// is not removed must be listed exactly once.
func DirMutationCases(n int) []Case {
	return []Case{
		{"RmRfReaddir", func(e *Env) { mutRmRf(e, n, false) }},
		{"RmRfReaddirplus", func(e *Env) { mutRmRf(e, n, true) }},
		{"RemoveUnseen", func(e *Env) { mutRemoveUnseen(e, n) }},
		{"AddWhileListing", func(e *Env) { mutAddWhileListing(e, n) }},
	}
}

// RunCases runs cases, each against a fresh server from dial.
func RunCases(t *testing.T, dial DialFunc, cases []Case) {
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			caller, root := dial(t)
			ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
			defer cancel()
			c.Run(&Env{T: t, Ctx: ctx, C: client.New(caller), Root: root})
		})
	}
}

// Names of up to 200 bytes are listed 1 KiB at a time: a few entries a
// call, hundreds of resumptions.
const (
	mutCount    = 1024
	mutDirCount = 512
)

func mutName(i int) string {
	return fmt.Sprintf("%05d-%s", i, strings.Repeat("x", (i*37)%190))
}

// fill makes directory "d" holding n files.
func fill(e *Env, n int) ([]byte, []string) {
	d := e.Dir(e.Root, "d", 0o755)
	names := make([]string, n)
	for i := range names {
		names[i] = mutName(i)
		_, err := e.C.Create(e.Ctx, d, names[i], wire.CreateHow{Mode: wire.Guarded})
		e.OK(err, "CREATE "+names[i])
	}
	return d, names
}

// listPages lists dir from cookie 0 with READDIR (or READDIRPLUS) of the
// small counts, calling between with each page's names (not "." or
// ".."), and returns how often each name was listed.
func listPages(e *Env, dir []byte, n int, plus bool, between func(page []string)) map[string]int {
	e.T.Helper()
	count := map[string]int{}
	var cookie uint64
	var verf [wire.CookieVerfSize]byte
	known := false // the listing's verifier is known (it may be zero)
	for calls := 0; ; calls++ {
		if calls > 4*n+100 {
			e.T.Fatalf("listing did not end after %d calls", calls)
		}
		var page []string
		var eof bool
		var v [wire.CookieVerfSize]byte
		if plus {
			res, err := e.C.Readdirplus(e.Ctx, dir, cookie, verf, mutDirCount, mutCount)
			e.OK(err, fmt.Sprintf("READDIRPLUS cookie %#x", cookie))
			for _, en := range res.Entries {
				count[en.Name]++
				cookie = en.Cookie
				if en.Name != "." && en.Name != ".." {
					page = append(page, en.Name)
					if !en.FH.Set || !en.Attr.Set {
						e.T.Errorf("READDIRPLUS entry %q without handle or attributes", en.Name)
					}
				}
			}
			eof, v = res.EOF, res.Verf
			if len(res.Entries) == 0 && !eof {
				e.T.Fatal("READDIRPLUS: no entries and no eof")
			}
		} else {
			res, err := e.C.Readdir(e.Ctx, dir, cookie, verf, mutCount)
			e.OK(err, fmt.Sprintf("READDIR cookie %#x", cookie))
			for _, en := range res.Entries {
				count[en.Name]++
				cookie = en.Cookie
				if en.Name != "." && en.Name != ".." {
					page = append(page, en.Name)
				}
			}
			eof, v = res.EOF, res.Verf
			if len(res.Entries) == 0 && !eof {
				e.T.Fatal("READDIR: no entries and no eof")
			}
		}
		if known && v != verf {
			e.T.Fatalf("cookie verifier changed mid-listing: %x to %x", verf, v)
		}
		verf, known = v, true
		for _, n := range page {
			if count[n] > 1 {
				e.T.Errorf("%q listed %d times", n, count[n])
			}
		}
		if between != nil {
			between(page)
		}
		if eof {
			return count
		}
	}
}

func once(e *Env, count map[string]int, names []string, skip map[string]bool, what string) {
	e.T.Helper()
	bad := 0
	for _, n := range names {
		if !skip[n] && count[n] != 1 {
			if bad++; bad <= 5 {
				e.T.Errorf("%s %q listed %d times, want once", what, n, count[n])
			}
		}
	}
	if bad > 5 {
		e.T.Errorf("%d %s names in all not listed exactly once", bad, what)
	}
}

// mutRmRf removes every listed entry before asking for the next page,
// then removes the directory, which must be empty.
func mutRmRf(e *Env, n int, plus bool) {
	d, names := fill(e, n)
	count := listPages(e, d, n, plus, func(page []string) {
		for _, n := range page {
			_, err := e.C.Remove(e.Ctx, d, n)
			e.OK(err, "REMOVE "+n)
		}
	})
	once(e, count, names, nil, "entry")
	_, err := e.C.Rmdir(e.Ctx, e.Root, "d")
	e.OK(err, "RMDIR of the directory rm -rf emptied")
}

// mutRemoveUnseen removes entries not listed yet; they must not appear,
// and the others must, once.
func mutRemoveUnseen(e *Env, n int) {
	d, names := fill(e, n)
	listed := map[string]bool{}
	removed := map[string]bool{}
	next := len(names) - 1
	count := listPages(e, d, n, false, func(page []string) {
		for _, n := range page {
			listed[n] = true
			if removed[n] {
				e.T.Errorf("%q listed after it was removed", n)
			}
		}
		// Remove two not-yet-listed names from the far end of the fill.
		for k := 0; k < 2 && next >= 0; next-- {
			if n := names[next]; !listed[n] {
				_, err := e.C.Remove(e.Ctx, d, n)
				e.OK(err, "REMOVE "+n)
				removed[n] = true
				k++
			}
		}
	})
	once(e, count, names, removed, "surviving")
}

// mutAddWhileListing creates entries between pages; the original ones
// are listed once each.
func mutAddWhileListing(e *Env, n int) {
	d, names := fill(e, n)
	i := 0
	count := listPages(e, d, n, false, func(page []string) {
		for range 3 {
			n := fmt.Sprintf("added-%05d", i)
			i++
			_, err := e.C.Create(e.Ctx, d, n, wire.CreateHow{Mode: wire.Guarded})
			e.OK(err, "CREATE "+n)
		}
	})
	once(e, count, names, nil, "original")
}
