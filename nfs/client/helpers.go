package client

import (
	"context"
	"errors"
	"strings"

	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
)

// Transfer sizes of the helpers.
const (
	helperIO       = 1 << 20
	helperDirCount = 32 << 10
)

// LookupPath resolves a slash-separated path below dir, one LOOKUP per
// component, and returns the final handle.
func (c *Client) LookupPath(ctx context.Context, dir []byte, path string) ([]byte, error) {
	fh := dir
	for _, name := range strings.Split(path, "/") {
		if name == "" {
			continue
		}
		res, err := c.Lookup(ctx, fh, name)
		if err != nil {
			return nil, err
		}
		fh = res.FH
	}
	return fh, nil
}

// ReadAll reads a whole file with READs of up to rsize (default 1 MiB)
// until eof.
func (c *Client) ReadAll(ctx context.Context, fh []byte) ([]byte, error) {
	var out []byte
	for {
		res, err := c.Read(ctx, fh, uint64(len(out)), uint32(ioSize(c.rsize)))
		if err != nil {
			return out, err
		}
		out = append(out, res.Data...)
		if res.EOF {
			return out, nil
		}
		if len(res.Data) == 0 {
			return out, errors.New("nfs READ: no data and no eof")
		}
	}
}

// WriteAll writes data at offset 0 with FILE_SYNC WRITEs of up to wsize
// (default 1 MiB).
func (c *Client) WriteAll(ctx context.Context, fh []byte, data []byte) error {
	for off := 0; off < len(data); {
		n := min(len(data)-off, ioSize(c.wsize))
		res, err := c.Write(ctx, fh, uint64(off), data[off:off+n], wire.FileSync)
		if err != nil {
			return err
		}
		if res.Count == 0 && n > 0 {
			return errors.New("nfs WRITE: short write")
		}
		off += int(res.Count)
	}
	return nil
}

// ReaddirAll lists a directory with READDIR calls of count bytes,
// following cookies until eof.
func (c *Client) ReaddirAll(ctx context.Context, dir []byte, count uint32) ([]wire.Entry, error) {
	if count == 0 {
		count = helperDirCount
	}
	return readAllPages("READDIR", func(cookie uint64, verf [wire.CookieVerfSize]byte) ([]wire.Entry, [wire.CookieVerfSize]byte, bool, error) {
		res, err := c.Readdir(ctx, dir, cookie, verf, count)
		if err != nil {
			return nil, verf, false, err
		}
		return res.Entries, res.Verf, res.EOF, nil
	}, func(e *wire.Entry) uint64 { return e.Cookie })
}

// ReaddirplusAll lists a directory with READDIRPLUS calls.
func (c *Client) ReaddirplusAll(ctx context.Context, dir []byte, dirCount, maxCount uint32) ([]wire.EntryPlus, error) {
	return readAllPages("READDIRPLUS", func(cookie uint64, verf [wire.CookieVerfSize]byte) ([]wire.EntryPlus, [wire.CookieVerfSize]byte, bool, error) {
		res, err := c.Readdirplus(ctx, dir, cookie, verf, dirCount, maxCount)
		if err != nil {
			return nil, verf, false, err
		}
		return res.Entries, res.Verf, res.EOF, nil
	}, func(e *wire.EntryPlus) uint64 { return e.Cookie })
}

// readAllPages follows a directory listing page by page: it calls page
// with the cookie of the last entry so far and the verifier of the last
// reply until a reply says eof, and collects the entries. A page with
// neither entries nor eof is an error, named after proc.
func readAllPages[E any](proc string, page func(cookie uint64, verf [wire.CookieVerfSize]byte) ([]E, [wire.CookieVerfSize]byte, bool, error), cookieOf func(*E) uint64) ([]E, error) {
	var all []E
	var cookie uint64
	var verf [wire.CookieVerfSize]byte
	for {
		entries, nextVerf, eof, err := page(cookie, verf)
		if err != nil {
			return all, err
		}
		all = append(all, entries...)
		if eof {
			return all, nil
		}
		if len(entries) == 0 {
			return all, errors.New("nfs " + proc + ": no entries and no eof")
		}
		cookie, verf = cookieOf(&entries[len(entries)-1]), nextVerf
	}
}
