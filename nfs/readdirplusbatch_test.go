package nfs_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"go.uber.org/zap"

	"github.com/gonfsrdma/gonfsrdma/nfs"
	"github.com/gonfsrdma/gonfsrdma/nfs/client"
	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/vfs"
)

// countingDirFS counts the entries the backend's ReadDir handed out.
type countingDirFS struct {
	vfs.FS
	listed atomic.Int64
}

func (c *countingDirFS) ReadDir(dir vfs.Handle, cookie, verf uint64, max int) ([]vfs.DirEntry, uint64, bool, error) {
	es, v, eof, err := c.FS.ReadDir(dir, cookie, verf, max)
	c.listed.Add(int64(len(es)))
	return es, v, eof, err
}

// READDIRPLUS asks the backend for about the entries a page holds, not
// for what a page of READDIR entries would hold: the OS backend stats
// every entry it lists (when the directory changed recently), so every
// entry fetched and not sent was a wasted system call. The listing is the
// same: every name once.
func TestReaddirplusBatchFitsPage(t *testing.T) {
	dir := t.TempDir()
	const n = 600
	makeEmptyFiles(t, dir, n)
	fs := &countingDirFS{FS: newOSFS(t, dir)}
	ts := startServer(t, zap.NewNop(), nfs.Config{}, fs)
	defer ts.stop(t)
	rpc := dialClient(t, ts.addr)
	defer rpc.Close()
	c := client.New(rpc)
	for _, maxCount := range []uint32{8192, 32768} {
		fs.listed.Store(0)
		es, err := c.ReaddirplusAll(context.Background(), ts.root(t), maxCount, maxCount)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, e := range es {
			if seen[e.Name] || !e.FH.Set || !e.Attr.Set {
				t.Fatalf("maxcount %d: entry %q repeated or without handle/attributes", maxCount, e.Name)
			}
			seen[e.Name] = true
		}
		if len(es) != n+2 {
			t.Fatalf("maxcount %d: %d entries, want %d", maxCount, len(es), n+2)
		}
		// Each page's batch may run a little past what the page holds
		// (it is sized by the smallest full entry); a batch sized for
		// READDIR entries fetched several times the listing.
		if got := fs.listed.Load(); got > int64(len(es))*3/2 {
			t.Errorf("maxcount %d: the backend listed %d entries for %d sent", maxCount, got, len(es))
		}
	}
}

// READDIRPLUS on a backend with vfs.EntryLooker resolves the directory a
// few times per page (its attributes, each ReadDir batch, the entries'
// lookups together), not once per entry.
func TestReaddirplusResolvesDirOncePerPage(t *testing.T) {
	dir := t.TempDir()
	const n = 300
	makeEmptyFiles(t, dir, n)
	fs := newOSFS(t, dir)
	ts := startServer(t, zap.NewNop(), nfs.Config{}, fs)
	defer ts.stop(t)
	rpc := dialClient(t, ts.addr)
	defer rpc.Close()
	c := client.New(rpc)
	hits := fs.OpenFileCache().Hits
	es, err := c.ReaddirplusAll(context.Background(), ts.root(t), 1<<20, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != n+2 {
		t.Fatalf("%d entries, want %d", len(es), n+2)
	}
	if got := fs.OpenFileCache().Hits - hits; got > 10 {
		t.Errorf("one READDIRPLUS page of %d entries resolved handles %d times", len(es), got)
	}
}

// SETATTR on a backend with vfs.AttrSetter resolves the handle once (was
// three times: GetAttr before, SetAttr, GetAttr after), and answers as
// before: the mode changed and the attributes after it in wcc_data, a
// guard that does not match refused with the attributes before.
func TestSetattrResolvesOnce(t *testing.T) {
	fs := newOSFS(t, t.TempDir())
	ts := startServer(t, zap.NewNop(), nfs.Config{}, fs)
	defer ts.stop(t)
	rpc := dialClient(t, ts.addr)
	defer rpc.Close()
	c := client.New(rpc)
	ctx := context.Background()
	cr, err := c.Create(ctx, ts.root(t), "f", wire.CreateHow{Mode: wire.Unchecked})
	if err != nil {
		t.Fatal(err)
	}
	hits := fs.OpenFileCache().Hits
	res, err := c.Setattr(ctx, cr.FH.FH, wire.Sattr{Mode: wire.SetUint32{Set: true, V: 0o600}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := fs.OpenFileCache().Hits - hits; got != 1 {
		t.Errorf("SETATTR resolved its handle %d times, want once", got)
	}
	if !res.Wcc.Before.Set || !res.Wcc.After.Set || res.Wcc.After.Attr.Mode != 0o600 {
		t.Errorf("SETATTR wcc_data %+v, want before and after, mode 0600 after", res.Wcc)
	}
	guard := res.Wcc.After.Attr.Ctime
	guard.Sec++
	res, err = c.Setattr(ctx, cr.FH.FH, wire.Sattr{Mode: wire.SetUint32{Set: true, V: 0o644}}, &guard)
	if client.StatusOf(err) != wire.ErrNotSync || res == nil || !res.Wcc.After.Set || res.Wcc.After.Attr.Mode != 0o600 {
		t.Errorf("SETATTR with a stale guard: %v (%+v), want NOT_SYNC and mode 0600 unchanged", err, res)
	}
}

// makeEmptyFiles makes n empty files file-0000... in dir.
func makeEmptyFiles(t *testing.T, dir string, n int) {
	t.Helper()
	for i := range n {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("file-%04d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
