package cephfs

import (
	"errors"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/gonfsrdma/gonfsrdma/vfs"
)

// Options configure one CephFS export.
type Options struct {
	// ConfigFile is the cluster's ceph.conf (monitor addresses and the
	// rest); empty: libcephfs's default search ($CEPH_CONF,
	// /etc/ceph/ceph.conf, ...).
	ConfigFile string
	// ClientID is the Ceph client name without "client." (default
	// "admin"); Keyring the keyring file holding its key (default: the
	// configuration's).
	ClientID, Keyring string
	// FSName selects a file system of the cluster by name (default: the
	// cluster's default file system).
	FSName string
	// Root is the exported directory inside the file system (default
	// "/"); it must exist.
	Root string
	// HandleKey, when set (at least 16 bytes), authenticates file handles.
	// Every head that exports the same directory must use the same key
	// for handles to be valid on all of them. Empty: the key kept in the
	// export root's extended attribute KeyXattr (created on first use),
	// which every head mounting the directory reads.
	HandleKey []byte
	// HandleDomain is bound into every handle's authenticator (the NFS
	// server passes nfs.HandleDomain(fsid)), as for the OS backend.
	HandleDomain []byte
	// SessionUUID names this head's MDS session. It must be the same
	// across restarts of one head and differ between heads (and between
	// the exports of one head). When set, New first ends the session a
	// previous run under the same name left (after a crash it would hold
	// its capabilities, and so block other heads' access to the files it
	// had open, until the MDS's session timeout). Empty: no reclaim.
	SessionUUID string
	// HeadID names this server among the heads over the file system: its
	// key in the shared grace records (grace.go; needs the monitors'
	// `fs dump` and writing the first data pool, as a CephFS client's
	// usual capabilities allow). A GraceUntil in the future (this start
	// has NLM locks to reclaim, which the previous run's CephFS locks
	// stood for) is recorded before New ends that run's session, so that
	// every head refuses new locks until then (FS.GraceEnd); a zero or
	// past GraceUntil removes the head's record. Empty: no records.
	HeadID     string
	GraceUntil time.Time
	// MaxOpenFiles bounds the inodes (with their open files) kept between
	// calls (default 1024).
	MaxOpenFiles int
	// MountTimeout bounds connecting and mounting (default: libcephfs's,
	// 300 s).
	MountTimeout time.Duration
	// Logger receives boundary events; nil: none.
	Logger *zap.Logger
}

// ErrNotBuilt is what New returns in a binary built without the backend.
var ErrNotBuilt = errors.New("cephfs: this gonfsrdma was built without the CephFS backend; " +
	"build it with `make build-ceph` (go build -tags ceph, needs libcephfs-dev and librados-dev)")

// KeyXattr is the export root's extended attribute that holds the handle
// key when Options.HandleKey is empty.
const KeyXattr = "trusted.gonfsrdma.fhkey"

func (o *Options) check() error {
	if len(o.HandleKey) > 0 && len(o.HandleKey) < 16 {
		return errors.New("cephfs: Options.HandleKey must be at least 16 bytes")
	}
	if o.Root != "" && !strings.HasPrefix(o.Root, "/") {
		return errors.New("cephfs: Options.Root must be an absolute path inside the file system")
	}
	if o.ClientID != "" && strings.HasPrefix(o.ClientID, "client.") {
		return errors.New(`cephfs: Options.ClientID is the name without "client."`)
	}
	return nil
}

// cookieVerf is the READDIR cookie verifier: zero, the same on every head
// and across restarts, since CephFS's positions stay valid as long as
// handles do (doc.go, "ReadDir cookies").
const cookieVerf = 0

// fileCounts fills in FSSTAT's file figures. libcephfs reports the
// files in use as f_files and no limit (all ones) as f_ffree: CephFS has
// no inode table to run out of. FSSTAT then says total = 2^63-1 (the
// largest count every NFS client reads as a number), free = available =
// total - used.
func fileCounts(s vfs.FSStat) vfs.FSStat {
	if s.FreeFiles == ^uint64(0) || s.FreeFiles > s.TotalFiles {
		used := s.TotalFiles
		s.TotalFiles = 1<<63 - 1
		if used > s.TotalFiles {
			used = s.TotalFiles
		}
		s.FreeFiles = s.TotalFiles - used
		s.AvailFiles = s.FreeFiles
	}
	if s.AvailFiles > s.FreeFiles {
		s.AvailFiles = s.FreeFiles
	}
	return s
}
