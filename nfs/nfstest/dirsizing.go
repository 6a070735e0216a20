package nfstest

import (
	"fmt"
	"slices"
	"sync"

	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
)

// DirSizingCases check the size of READDIR and READDIRPLUS pages at the
// counts the Linux client sends once it has grown its dtsize to the FSINFO
// dtpref (1 MiB, as knfsd answers it) and, for READDIRPLUS, at each count
// it grows through from its first one: a page holds as many entries as
// fit the count, however many that is (the backend lists at most 4,096
// entries a call, so a larger page takes several), the entries with the
// list end and eof stay within the count as knfsd counts it (the
// directory attributes and verifier before them are not counted; RFC 1813
// sections 3.3.16, 3.3.17 count them too), and the pages together list
// the directory exactly once. With names, only the cases of those names.
func DirSizingCases(names ...string) []Case {
	all := []Case{
		{"ReaddirplusFullPage", func(e *Env) {
			d := sizingFill(e)
			sizingPages(e, d, true, []uint32{wire.MaxData})
			sizingKernelCounts(e, d)
		}},
		{"ReaddirFullPage", func(e *Env) { sizingPages(e, sizingFill(e), false, []uint32{192 << 10}) }},
		{"ReaddirOnePage", func(e *Env) { sizingPages(e, sizingFill(e), false, []uint32{wire.MaxData}) }},
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

// sizingPage is one page: its entries' names and cookies, the size of
// its entries with the list end and eof (what count bounds), and that
// size with one entry more.
type sizingPage struct {
	names   []string
	cookies []uint64
	size    int
	// entry is the encoded size of each entry
	entry []int
	eof   bool
	verf  [wire.CookieVerfSize]byte
	// first / plusFirst is the page's first entry
	first     wire.Entry
	plusFirst wire.EntryPlus
	// withOne returns size with the first entry of the next page added.
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
			p.entry = append(p.entry, len(x.Append(nil)))
		}
		p.size, p.eof, p.verf = dirListSize(len(res.Append(nil)), res.DirAttr), res.EOF, res.Verf
		p.withOne = func(next *sizingPage) int {
			r2 := *res
			r2.Entries = append(res.Entries[:len(res.Entries):len(res.Entries)], next.plusFirst)
			return dirListSize(len(r2.Append(nil)), r2.DirAttr)
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
		p.entry = append(p.entry, wire.EntrySize(x.Name))
	}
	p.size, p.eof, p.verf = dirListSize(len(res.Append(nil)), res.DirAttr), res.EOF, res.Verf
	p.withOne = func(next *sizingPage) int {
		r2 := *res
		r2.Entries = append(res.Entries[:len(res.Entries):len(res.Entries)], next.first)
		return dirListSize(len(r2.Append(nil)), r2.DirAttr)
	}
	if len(res.Entries) > 0 {
		p.first = res.Entries[0]
	}
	return p
}

// dirListSize is the part of an encoded READDIR3res or READDIRPLUS3res
// (encoded bytes, status included, OK) that count or maxcount bounds as
// knfsd counts it: the entries, the list end and eof, without the status,
// the directory's post_op_attr and the cookie verifier.
func dirListSize(encoded int, dirAttr wire.PostOpAttr) int {
	head := 4 + 4 + wire.CookieVerfSize
	if dirAttr.Set {
		head += wire.FattrSize
	}
	return encoded - head
}

// sizingPages lists directory d with pages of counts[i] bytes for the
// i-th page (the last count for the pages after): every page within its
// count, every page but the last full (the next page's first entry would
// not have fitted), every name exactly once. It returns the pages.
func sizingPages(e *Env, d []byte, plus bool, counts []uint32) []*sizingPage {
	seen := map[string]int{}
	var pages []*sizingPage
	var cookie uint64
	var verf [wire.CookieVerfSize]byte
	for {
		if len(pages) > sizingEntries {
			e.T.Fatalf("listing did not end after %d pages", len(pages))
		}
		count := counts[min(len(pages), len(counts)-1)]
		p := sizingCall(e, d, plus, count, cookie, verf)
		if p.size > int(count) {
			e.T.Fatalf("page %d: entries and list end of %d bytes, count %d", len(pages), p.size, count)
		}
		if len(p.names) == 0 && !p.eof {
			e.T.Fatalf("page %d: no entries and no eof", len(pages))
		}
		if n := len(pages); n > 0 {
			prevCount := counts[min(n-1, len(counts)-1)]
			if prev := pages[n-1]; prev.withOne(p) <= int(prevCount) {
				e.T.Fatalf("page %d of %d bytes (%d entries) is not full: the next entry %q fits within count %d (%d bytes)",
					n-1, prev.size, len(prev.names), p.names[0], prevCount, prev.withOne(p))
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
	if counts[0] == wire.MaxData {
		if n := len(pages[0].names); n <= 4096 {
			e.T.Fatalf("first page of count %d holds %d entries, want more than one backend batch of 4096", counts[0], n)
		}
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
	e.T.Logf("counts %v: %d pages of %v entries", counts, len(pages), sizes)
	return pages
}

// kernelPlusCounts are the READDIRPLUS counts a Linux client sends
// listing a big directory, dircount = maxcount (fs/nfs/nfs3xdr.c
// encode_readdirplus3args, 5.18 and later): its first count is 64 KiB
// (fs/nfs/dir.c NFS_INIT_DTSIZE: SZ_64K in current kernels and the stable
// ones it was backported to, PAGE_SIZE before), doubled for each buffer
// it had to go back to the server for (nfs_grow_dtsize) up to the
// server's dtsize, here the FSINFO dtpref of 1 MiB. The guests' 6.1
// client listed 20,000 names from knfsd with five READDIRPLUS holding
// 5,970 of them: what 64 KiB to 1 MiB hold, not 4 KiB to 64 KiB.
var kernelPlusCounts = []uint32{64 << 10, 128 << 10, 256 << 10, 512 << 10, 1 << 20}

// sizingKernelCounts lists d, filled by sizingFill, with READDIRPLUS at
// the Linux client's counts and checks each reply's entries against the
// count: the names after the first page are all of one length, so each
// full page after the first holds exactly (count - list end and eof) /
// entry size entries, as many as knfsd packs of entries that size
// (fs/nfsd/nfs3proc.c nfsd3_init_dirlist_pages gives the entries count
// less 8 bytes). The log says what knfsd would send with its own handle
// size for the export (20 bytes on tmpfs with fsid=1).
func sizingKernelCounts(e *Env, d []byte) {
	pages := sizingPages(e, d, true, kernelPlusCounts)
	if len(pages) <= len(kernelPlusCounts)-1 {
		e.T.Fatalf("%d pages at the kernel's counts, want more than %d (every count used)", len(pages), len(kernelPlusCounts)-1)
	}
	const knfsdTmpfsHandle = 20
	var got, knfsd, counts []int
	for i, p := range pages[1 : len(pages)-1] {
		count := int(kernelPlusCounts[min(i+1, len(kernelPlusCounts)-1)])
		counts = append(counts, count)
		size := p.entry[0]
		for _, n := range p.entry {
			if n != size {
				e.T.Fatalf("page %d: entries of %d and %d bytes, want one size (names of one length)", i+1, size, n)
			}
		}
		if want := (count - 8) / size; len(p.names) != want {
			e.T.Errorf("READDIRPLUS maxcount %d: %d entries of %d bytes, want %d", count, len(p.names), size, want)
		}
		got = append(got, len(p.names))
		// an entry with knfsd's handle: the same but for the handle's
		// padded length
		handle := size - wire.EntrySize(p.names[0]) - 4 - wire.FattrSize - 4 - 4
		knfsd = append(knfsd, (count-8)/(size-handle+knfsdTmpfsHandle))
	}
	e.T.Logf("READDIRPLUS full pages after the first at the kernel's counts %v: %v entries; with knfsd's 20-byte handles: %v", counts, got, knfsd)
}
