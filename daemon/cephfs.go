package daemon

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"go.uber.org/zap"

	"github.com/gonfsrdma/gonfsrdma/exports"
	"github.com/gonfsrdma/gonfsrdma/nfs"
	"github.com/gonfsrdma/gonfsrdma/vfs"
	"github.com/gonfsrdma/gonfsrdma/vfs/cephfs"
)

// BackendAvailable reports why this binary cannot open backend (nil when
// it can): backend=cephfs needs a binary built with -tags ceph (make
// build-ceph). It is the exports parser's BackendAvailable, for serve and
// `exports check` alike.
func BackendAvailable(backend string) error {
	if backend == exports.BackendCephFS && !cephfs.Built {
		return cephfs.ErrNotBuilt
	}
	return nil
}

// cephMountTimeout bounds connecting to the cluster and mounting, so that
// a start or reload with an unreachable cluster fails with a clear error
// instead of waiting out libcephfs's five minutes.
const cephMountTimeout = 30 * time.Second

// openCephFS mounts a backend=cephfs export. Its handles are bound to
// the fsid like the OS backend's; their key is the ceph_fhkey file (the
// same file on every server), else the one kept in the exported
// directory's xattr, which every server mounting it reads, so that every
// server exporting the directory with the same fsid accepts the same
// handles. The daemon's own state-directory key is not used: it differs
// between servers.
//
// Its MDS session is named after this server (an id kept in the state
// directory) and the fsid, so that after a crash the restarted server ends
// the session its previous run left, whose capabilities would otherwise
// block the other servers' access to the files it had open until the MDS's
// session timeout.
//
// graceUntil, when in the future, is this start's NLM grace end, recorded
// for the other heads before that session ends (cephgrace.go).
func openCephFS(o exports.CephOptions, fsid uint32, stateDir string, graceUntil time.Time, log *zap.Logger) (vfs.FS, error) {
	id, err := headID(stateDir)
	if err != nil {
		return nil, err
	}
	var key []byte
	if o.FHKey != "" {
		if key, err = os.ReadFile(o.FHKey); err != nil {
			return nil, fmt.Errorf("ceph_fhkey: %w", err)
		}
		if len(key) < 16 {
			return nil, fmt.Errorf("ceph_fhkey %s: %d bytes, want at least 16 (e.g. head -c 32 /dev/urandom > %s)", o.FHKey, len(key), o.FHKey)
		}
	}
	f, err := cephfs.New(cephfs.Options{
		ConfigFile: o.Conf, ClientID: o.Name, Keyring: o.Keyring, FSName: o.FS, Root: o.Path,
		HandleKey: key, HandleDomain: nfs.HandleDomain(fsid), Logger: log,
		SessionUUID:  fmt.Sprintf("gonfsrdma-%s-%d", id, fsid),
		MountTimeout: cephMountTimeout,
		HeadID:       id, GraceUntil: graceUntil,
	})
	if err != nil {
		return nil, err
	}
	return f, nil
}

// headID returns this server's id, 16 random hex digits kept in
// STATE_DIR/cephfs-head-id (made on first use).
func headID(stateDir string) (string, error) {
	p := filepath.Join(stateDir, "cephfs-head-id")
	b, err := os.ReadFile(p)
	if err == nil && len(b) == 16 {
		return string(b), nil
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("cephfs head id: %w", err)
	}
	r := make([]byte, 8)
	rand.Read(r)
	id := hex.EncodeToString(r)
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, []byte(id), 0o600); err != nil {
		return "", fmt.Errorf("cephfs head id: %w", err)
	}
	if err := os.Rename(tmp, p); err != nil {
		return "", fmt.Errorf("cephfs head id: %w", err)
	}
	return id, nil
}
