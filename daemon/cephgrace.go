package daemon

import (
	"time"

	"go.uber.org/zap"

	"github.com/gonfsrdma/gonfsrdma/nsm"
)

// The NLM grace period shared by the heads over one CephFS directory.
// A head restarting with clients to reclaim records the end of its grace
// period in the export root (vfs/cephfs: one xattr per head) before it
// ends its previous run's MDS session, whose CephFS locks stood for those
// clients' locks until then; every head's lock manager then refuses
// non-reclaim locks (DENIED_GRACE_PERIOD) while its own grace or any
// head's recorded one lasts, so no other head grants a lock a reclaim
// still needs. Heads' clocks are assumed to agree (NTP): a record holds a
// wall-clock end.

// graceRecords is what a CephFS export (vfs/cephfs.FS) offers for the
// shared grace.
type graceRecords interface {
	// GraceEnd is the latest end among the heads' records.
	GraceEnd() (time.Time, error)
	// PublishGrace records until as the end of head's grace period.
	PublishGrace(head string, until time.Time) error
}

// sharedGrace is the lock manager's status monitor: the NSM, whose own
// grace is joined by the other heads' recorded ones.
type sharedGrace struct {
	*nsm.Server
	st *exportState
}

// InGrace implements nlm.Monitor.
func (g sharedGrace) InGrace() bool {
	return g.Server.InGrace() || g.st.peersInGrace(time.Now())
}

// peersInGrace reports whether a head's grace record on any CephFS
// export lasts past now. A record that cannot be read counts as grace:
// a refused lock is retried by the client, a wrongly granted one breaks
// another client's reclaim.
func (st *exportState) peersInGrace(now time.Time) bool {
	set := st.cur.Load()
	if set == nil {
		return false
	}
	for _, e := range set.byFSID {
		g, ok := e.nfs.FS.(graceRecords)
		if !ok {
			continue
		}
		end, err := g.GraceEnd()
		if err != nil {
			st.log.Warn("cephfs: reading the heads' grace records; refusing new locks", zap.String("export", e.cfg.Path), zap.Error(err))
			return true
		}
		if end.After(now) {
			return true
		}
	}
	return false
}

// cephGraceUntil is the grace end a CephFS export opened now records:
// before the status monitor starts, its prediction from the state
// directory (now + grace when clients held locks), after, the monitor's
// own end; zero without locking.
func (st *exportState) cephGraceUntil() time.Time {
	if st.lockGraceEnd == nil {
		return time.Time{}
	}
	return st.lockGraceEnd()
}

// predictedGrace is cephGraceUntil before the status monitor starts.
func predictedGrace(log *zap.Logger, cfg Config) func() time.Time {
	return func() time.Time {
		need, err := nsm.NeedsGrace(cfg.StateDir)
		if err != nil {
			// nsm.Start reads the same file and fails the start.
			log.Warn("status monitor state unreadable; no grace recorded for the other heads", zap.Error(err))
			return time.Time{}
		}
		if !need {
			return time.Time{}
		}
		return time.Now().Add(cfg.Grace)
	}
}

// publishGrace records the status monitor's exact grace end on every
// CephFS export (opened with the prediction), once it has started.
func (d *Daemon) publishGrace() {
	if !d.nsm.InGrace() {
		return
	}
	id, err := headID(d.st.stateDir)
	if err != nil {
		d.log.Warn("cephfs: grace record", zap.Error(err))
		return
	}
	end := d.nsm.GraceEnd()
	for _, e := range d.st.cur.Load().byFSID {
		if g, ok := e.nfs.FS.(graceRecords); ok {
			if err := g.PublishGrace(id, end); err != nil {
				d.log.Warn("cephfs: grace record", zap.String("export", e.cfg.Path), zap.Error(err))
			}
		}
	}
}
