package conformance

import (
	"fmt"

	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
)

// READDIR and READDIRPLUS cookies and verifiers (RFC 1813 sections
// 3.3.16, 3.3.17): creates during a listing, stale verifiers, file ids,
// small dircount.

// readdirPage reads one page of at most count bytes.
func (e *Env) readdirPage(dir []byte, cookie uint64, verf [8]byte, count uint32) (*wire.ReaddirRes, error) {
	r, err := e.C.Readdir(e.Ctx, dir, cookie, verf, count)
	if err != nil {
		return nil, ok(err, fmt.Sprintf("READDIR cookie %d", cookie))
	}
	return r, nil
}

func testReaddirCreates(e *Env) error {
	d, err := e.mkdir(e.Dir, "d")
	if err != nil {
		return err
	}
	for i := 0; i < 30; i++ {
		if _, err := e.file(d, fmt.Sprintf("first-%02d", i), nil); err != nil {
			return err
		}
	}
	seen := map[string]bool{}
	r, err := e.readdirPage(d, 0, [8]byte{}, 512)
	if err != nil {
		return err
	}
	if r.EOF || len(r.Entries) == 0 {
		return fmt.Errorf("a 512-byte READDIR page of 32 entries: %d entries, eof %v", len(r.Entries), r.EOF)
	}
	for _, en := range r.Entries {
		seen[en.Name] = true
	}
	cookie, verf := r.Entries[len(r.Entries)-1].Cookie, r.Verf
	repeated := ""
	for i := 0; i < 10; i++ {
		if _, err := e.file(d, fmt.Sprintf("later-%02d", i), nil); err != nil {
			return err
		}
	}
	for !r.EOF {
		r, err = e.readdirPage(d, cookie, verf, 512)
		if err != nil {
			if statusOf(err) == wire.ErrBadCookie {
				return Warnf("READDIR after creates: NFS3ERR_BAD_COOKIE; knfsd continues")
			}
			return err
		}
		for _, en := range r.Entries {
			if seen[en.Name] && repeated == "" {
				repeated = en.Name
			}
			seen[en.Name] = true
			cookie = en.Cookie
		}
		verf = r.Verf
		if len(r.Entries) == 0 && !r.EOF {
			return fmt.Errorf("READDIR page with no entries and no eof")
		}
	}
	for i := 0; i < 30; i++ {
		if n := fmt.Sprintf("first-%02d", i); !seen[n] {
			return fmt.Errorf("READDIR lost %q, which existed before the listing began", n)
		}
	}
	if repeated != "" {
		// RFC 1813 does not require cookies to survive changes to the
		// directory; some file systems (tmpfs: offsets are list
		// positions) shift them, and knfsd then repeats entries too.
		return Warnf("READDIR repeated %q after entries were created mid-listing (cookies of the exported file system shift)", repeated)
	}
	return nil
}

func testReaddirStaleVerf(e *Env) error {
	d, err := e.mkdir(e.Dir, "d")
	if err != nil {
		return err
	}
	for i := 0; i < 20; i++ {
		if _, err := e.file(d, fmt.Sprintf("f%02d", i), nil); err != nil {
			return err
		}
	}
	r, err := e.readdirPage(d, 0, [8]byte{}, 512)
	if err != nil {
		return err
	}
	if r.EOF {
		return fmt.Errorf("a 512-byte page held 22 entries")
	}
	cookie := r.Entries[len(r.Entries)-1].Cookie
	bogus := r.Verf
	for i := range bogus {
		bogus[i] ^= 0x5a
	}
	_, err = e.C.Readdir(e.Ctx, d, cookie, bogus, 4096)
	switch statusOf(err) {
	case wire.OK, wire.ErrBadCookie:
		// RFC 1813 3.3.16 allows either: knfsd ignores verifiers,
		// gonfsrdma refuses a cookie with a verifier it did not issue
		// (the Linux client then restarts the listing).
		return nil
	}
	return fmt.Errorf("READDIR with a stale cookie verifier: %v", err)
}

func testReaddirFileIDs(e *Env) error {
	_, a, err := e.fileWithAttr(e.Dir, "f", nil)
	if err != nil {
		return err
	}
	ents, err := e.C.ReaddirAll(e.Ctx, e.Dir, 4096)
	if err != nil {
		return ok(err, "READDIR")
	}
	if id, found := names(ents)["f"]; !found || id != a.FileID {
		return fmt.Errorf("READDIR fileid of f is %d (found %v), GETATTR says %d (RFC 1813 3.3.16)", id, found, a.FileID)
	}
	return nil
}

func testReaddirBadHandle(e *Env) error {
	_, err := e.C.Readdir(e.Ctx, badHandle(), 0, [8]byte{}, 4096)
	return wantBadHandle(err, "READDIR of a malformed handle")
}

func testReaddirplusStale(e *Env) error {
	return e.wantStaleIn("READDIRPLUS of a removed directory", func(d []byte) error {
		_, err := e.C.Readdirplus(e.Ctx, d, 0, [8]byte{}, 4096, 8192)
		return err
	})
}

func testReaddirplusSmallDircount(e *Env) error {
	for i := 0; i < 5; i++ {
		if _, err := e.file(e.Dir, fmt.Sprintf("f%d", i), nil); err != nil {
			return err
		}
	}
	ents, err := e.C.ReaddirplusAll(e.Ctx, e.Dir, 64, 4096)
	if err != nil {
		return ok(err, "READDIRPLUS with dircount 64")
	}
	if got := len(names(plusEntries(ents))); got != 5 {
		return fmt.Errorf("READDIRPLUS in dircount-64 pages listed %d of 5 names", got)
	}
	return nil
}

func plusEntries(ps []wire.EntryPlus) []wire.Entry {
	out := make([]wire.Entry, len(ps))
	for i, p := range ps {
		out[i] = wire.Entry{FileID: p.FileID, Name: p.Name, Cookie: p.Cookie}
	}
	return out
}
