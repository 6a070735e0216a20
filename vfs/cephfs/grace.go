//go:build ceph && linux && cgo

package cephfs

import (
	"errors"
	"fmt"
	"time"

	"github.com/ceph/go-ceph/rados"
)

// The grace records shared by the heads over one file system: one RADOS
// object per CephFS file system (GraceObject), in the namespace
// GraceNamespace of its first data pool, whose omap holds one key per
// head (Options.HeadID) with the end of that head's NLM grace period in
// Unix nanoseconds (decimal). A head restarting with clients to reclaim
// writes its key before it ends its previous run's MDS session (whose
// CephFS locks stood for those clients' locks until then); every head's
// lock manager refuses new locks while any key's end is in the future
// (FS.GraceEnd). RADOS, not a file or xattr in CephFS: the MDS would hold
// such a write until the dead session's capabilities time out (measured:
// the restart hung past 60 s), and an OSD write is read back by every
// head at once.

// graceStore is one file system's grace record object.
type graceStore struct {
	ioctx *rados.IOContext
	oid   string
}

// openGraceStore finds file system fsName (empty: the default one)
// through the monitors, without the MDS, and opens its grace object.
func openGraceStore(conn *rados.Conn, fsName string) (*graceStore, error) {
	out, status, err := conn.MonCommand([]byte(`{"prefix": "fs dump", "format": "json"}`))
	if err != nil {
		return nil, fmt.Errorf("cephfs: grace records: fs dump: %w (%s)", err, status)
	}
	fscid, poolID, err := dataPoolOf(out, fsName)
	if err != nil {
		return nil, err
	}
	pool, err := conn.GetPoolByID(poolID)
	if err != nil {
		return nil, fmt.Errorf("cephfs: grace records: data pool %d: %w", poolID, err)
	}
	ioctx, err := conn.OpenIOContext(pool)
	if err != nil {
		return nil, fmt.Errorf("cephfs: grace records: pool %s: %w", pool, err)
	}
	ioctx.SetNamespace(GraceNamespace)
	return &graceStore{ioctx: ioctx, oid: GraceObject(fscid)}, nil
}

func (g *graceStore) close() { g.ioctx.Destroy() }

// set records until as the end of head's grace period.
func (g *graceStore) set(head string, until time.Time) error {
	if err := g.ioctx.SetOmap(g.oid, map[string][]byte{head: graceValue(until)}); err != nil {
		return fmt.Errorf("cephfs: writing grace record %s of %s: %w", head, g.oid, err)
	}
	return nil
}

// clear removes head's record; a missing object is no error.
func (g *graceStore) clear(head string) error {
	if err := g.ioctx.RmOmapKeys(g.oid, []string{head}); err != nil && !errors.Is(err, rados.ErrNotFound) {
		return fmt.Errorf("cephfs: removing grace record %s of %s: %w", head, g.oid, err)
	}
	return nil
}

// end returns the latest end among the records (zero: none); bad names
// the records whose value it could not read.
func (g *graceStore) end() (end time.Time, bad []string, err error) {
	vals, err := g.ioctx.GetAllOmapValues(g.oid, "", "", 64)
	if errors.Is(err, rados.ErrNotFound) {
		return time.Time{}, nil, nil
	}
	if err != nil {
		return time.Time{}, nil, fmt.Errorf("cephfs: reading grace records of %s: %w", g.oid, err)
	}
	for head, v := range vals {
		t, ok := parseGraceValue(v)
		if !ok {
			bad = append(bad, head)
			continue
		}
		if t.After(end) {
			end = t
		}
	}
	return end, bad, nil
}

// PublishGrace records until as the end of head's grace period (the lock
// manager's exact end once it has started; New wrote a prediction).
func (f *FS) PublishGrace(head string, until time.Time) error {
	if err := f.enter(); err != nil {
		return err
	}
	defer f.leave()
	if f.grace == nil {
		return errors.New("cephfs: no grace records (Options.HeadID was empty)")
	}
	return f.grace.set(head, until)
}

// GraceEnd returns the latest end among the heads' grace records of the
// file system (this head's too), the zero time when there is none. A
// record that cannot be parsed is an error: the caller should treat the
// file system as in grace.
func (f *FS) GraceEnd() (time.Time, error) {
	if err := f.enter(); err != nil {
		return time.Time{}, err
	}
	defer f.leave()
	if f.grace == nil {
		return time.Time{}, nil
	}
	end, bad, err := f.grace.end()
	if err == nil && len(bad) > 0 {
		err = fmt.Errorf("cephfs: unreadable grace records of heads %v in %s", bad, f.grace.oid)
	}
	return end, err
}
