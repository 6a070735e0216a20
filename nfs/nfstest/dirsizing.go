package nfstest

import (
	"fmt"
	"slices"
	"sync"

	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
)

// DirSizingCases check the size of READDIR and READDIRPLUS pages at the
// counts the Linux client sends once it has grown its dtsize to the FSINFO
// dtpref (1 MiB, as knfsd answers it): a page holds as many entries as fit
// the count, however many that is (the backend lists at most 4,096
// entries a call, so a larger page takes several), the encoded resok stays
// within the count (RFC 1813 sections 3.3.16, 3.3.17), and the pages
// together list the directory exactly once. With names, only the cases of
// those names.
func DirSizingCases(names ...string) []Case {
	all := []Case{
		{"ReaddirplusFullPage", func(e *Env) { sizingPages(e, true, wire.MaxData) }},
		{"ReaddirFullPage", func(e *Env) { sizingPages(e, false, 192<<10) }},
		{"ReaddirOnePage", func(e *Env) { sizingPages(e, false, wire.MaxData) }},
	}
	if len(names) == 0 {
		return all
	}
	var out []Case
	for _, c := range all {
		if slices.Contains(names, c.Name) {
			out = append(out, c)
		}
	}
	if len(out) != len(names) {
		panic(fmt.Sprintf("nfstest: DirSizingCases(%q) names a case that does not exist", names))
	}
	return out
}

// sizingEntries short names: more READDIRPLUS entries than 1 MiB holds
// (an entry with attributes and handle takes some 160 bytes) and more
// READDIR entries than 192 KiB holds (32 bytes each), but fewer than
// 1 MiB of READDIR entries.
const sizingEntries = 7000

func sizingName(i int) string { return fmt.Sprintf("s%05d", i) }

// sizingFill makes directory "d" of sizingEntries empty files, created by
// eight callers at once.
func sizingFill(e *Env) []byte {
	d := e.Dir(e.Root, "d", 0o755)
	const writers = 8
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < sizingEntries; i += writers {
				if _, err := e.C.Create(e.Ctx, d, sizingName(i), wire.CreateHow{Mode: wire.Guarded}); err != nil {
					errs <- fmt.Errorf("CREATE %s: %w", sizingName(i), err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		e.T.Fatal(err)
	}
	return d
}

// sizingPage is one page: its entries' names and cookies, its encoded
// resok size, and the encoded size it would have with one entry more.
type sizingPage struct {
	names   []string
	cookies []uint64
	size    int
	eof     bool
	verf    [wire.CookieVerfSize]byte
	// first / plusFirst is the page's first entry
	first     wire.Entry
	plusFirst wire.EntryPlus
	// withOne returns the encoded resok size with the first entry of
	// the next page added.
	withOne func(next *sizingPage) int
}

func sizingCall(e *Env, dir []byte, plus bool, count uint32, cookie uint64, verf [wire.CookieVerfSize]byte) *sizingPage {
	e.T.Helper()
	p := &sizingPage{}
	if plus {
		res, err := e.C.Readdirplus(e.Ctx, dir, cookie, verf, count, count)
		e.OK(err, fmt.Sprintf("READDIRPLUS maxcount %d cookie %#x", count, cookie))
		for i := range res.Entries {
			x := &res.Entries[i]
			if !x.FH.Set || !x.Attr.Set {
				e.T.Fatalf("READDIRPLUS entry %q without handle or attributes", x.Name)
			}
			p.names, p.cookies = append(p.names, x.Name), append(p.cookies, x.Cookie)
		}
		p.size, p.eof, p.verf = len(res.Append(nil))-4, res.EOF, res.Verf
		p.withOne = func(next *sizingPage) int {
			r2 := *res
			r2.Entries = append(res.Entries[:len(res.Entries):len(res.Entries)], next.plusFirst)
			return len(r2.Append(nil)) - 4
		}
		if len(res.Entries) > 0 {
			p.plusFirst = res.Entries[0]
		}
		return p
	}
	res, err := e.C.Readdir(e.Ctx, dir, cookie, verf, count)
	e.OK(err, fmt.Sprintf("READDIR count %d cookie %#x", count, cookie))
	for _, x := range res.Entries {
		p.names, p.cookies = append(p.names, x.Name), append(p.cookies, x.Cookie)
	}
	p.size, p.eof, p.verf = len(res.Append(nil))-4, res.EOF, res.Verf
	p.withOne = func(next *sizingPage) int {
		r2 := *res
		r2.Entries = append(res.Entries[:len(res.Entries):len(res.Entries)], next.first)
		return len(r2.Append(nil)) - 4
	}
	if len(res.Entries) > 0 {
		p.first = res.Entries[0]
	}
	return p
}

// sizingPages lists the directory with pages of count bytes: every page
// within count, every page but the last full (the next page's first entry
// would not have fitted), the first one holding more than 4,096 entries,
// and every name exactly once.
func sizingPages(e *Env, plus bool, count uint32) {
	d := sizingFill(e)
	seen := map[string]int{}
	var pages []*sizingPage
	var cookie uint64
	var verf [wire.CookieVerfSize]byte
	for {
		if len(pages) > sizingEntries {
			e.T.Fatalf("listing did not end after %d pages", len(pages))
		}
		p := sizingCall(e, d, plus, count, cookie, verf)
		if p.size > int(count) {
			e.T.Fatalf("page %d: resok of %d bytes, count %d", len(pages), p.size, count)
		}
		if len(p.names) == 0 && !p.eof {
			e.T.Fatalf("page %d: no entries and no eof", len(pages))
		}
		if n := len(pages); n > 0 {
			if prev := pages[n-1]; prev.withOne(p) <= int(count) {
				e.T.Fatalf("page %d of %d bytes (%d entries) is not full: the next entry %q fits within count %d (%d bytes)",
					n-1, prev.size, len(prev.names), p.names[0], count, prev.withOne(p))
			}
		}
		for i, name := range p.names {
			seen[name]++
			cookie = p.cookies[i]
		}
		verf = p.verf
		pages = append(pages, p)
		if p.eof {
			break
		}
	}
	if n := len(pages[0].names); n <= 4096 {
		e.T.Fatalf("first page of count %d holds %d entries, want more than one backend batch of 4096", count, n)
	}
	bad := 0
	for i := range sizingEntries {
		if seen[sizingName(i)] != 1 {
			if bad++; bad <= 5 {
				e.T.Errorf("%s listed %d times", sizingName(i), seen[sizingName(i)])
			}
		}
	}
	if len(seen) != sizingEntries+2 || seen["."] != 1 || seen[".."] != 1 {
		e.T.Errorf("%d distinct names (. %d, .. %d), want %d", len(seen), seen["."], seen[".."], sizingEntries+2)
	}
	sizes := make([]int, len(pages))
	for i, p := range pages {
		sizes[i] = len(p.names)
	}
	e.T.Logf("count %d: %d pages of %v entries", count, len(pages), sizes)
}
