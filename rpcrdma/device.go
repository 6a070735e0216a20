// device.go: what the server does when its RDMA device goes away
// (RDMA_CM_EVENT_DEVICE_REMOVAL: `rdma link delete`, a NIC or firmware
// reset, a hot-unplug). Every connection on the device dies with a
// verbs.DeviceRemovedError and tears down as any failed connection does
// (calls in flight dropped without a reply, slots, pool buffers and MRs
// freed, the queue pair closed); a listener bound to the device's address
// reports the removal from GetRequest, and Serve closes it at once, so
// nothing of the server is left on the device and the kernel can free
// it. Serve then listens on the same address again, first after
// Config.RelistenMin and then backing off to Config.RelistenMax, until the
// address is served by a device again; clients reconnect and retransmit,
// and the duplicate request cache answers the calls that had completed.
// TCP is not affected. The server logs one WARN per removal and one INFO
// when it listens again; each connection's end is an INFO line.
//
// Buffer ownership: none; the connections' teardown frees their memory.

package rpcrdma

import (
	"errors"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/gonfsrdma/gonfsrdma/verbs"
)

// removedMsg is the WARN of a device removal.
const removedMsg = "RDMA device removed; its connections are closed; listening again when it comes back"

// deviceRemoval remembers that a device removal was logged, so that a
// removal seen by the listener and by every connection makes one WARN.
// A connection established afterwards, or the listener coming back,
// forgets it.
type deviceRemoval struct {
	mu     sync.Mutex
	warned bool
}

// connected forgets the logged removal: RDMA works again.
func (r *deviceRemoval) connected() {
	r.mu.Lock()
	r.warned = false
	r.mu.Unlock()
}

// first reports whether this removal is the first one seen since RDMA
// last worked, and records it.
func (r *deviceRemoval) first() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.warned {
		return false
	}
	r.warned = true
	return true
}

// deviceRemoved logs err's device removal, once per removal, with the
// connections that are being closed; listener says the listener saw it
// (Serve then listens again). Errors that are no device removal are
// ignored.
func (s *Server) deviceRemoved(err error, listener bool) {
	var dre *verbs.DeviceRemovedError
	if !errors.As(err, &dre) && !errors.Is(err, verbs.ErrDeviceRemoved) {
		return
	}
	device := ""
	if dre != nil {
		device = dre.Device
	}
	if !s.removal.first() {
		if listener {
			s.log.Info("RDMA listener lost with its device; listening again when it comes back", zap.String("device", device))
		}
		return
	}
	// The same line whoever saw it first: a listener on the wildcard
	// address is bound to no device and stays, and the connection
	// manager listens on the device again by itself when it comes back.
	s.log.Warn(removedMsg, zap.String("device", device), zap.Int("connections", s.life.Len()))
}

// relisten logs the removal (the listener's) and listens on addr until
// it works or Shutdown begins (then it returns nil). The new listener is
// registered with the lifecycle.
func (s *Server) relisten(addr string, removed error) verbs.Listener {
	s.deviceRemoved(removed, true)
	wait := s.cfg.RelistenMin
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for attempts := 1; ; attempts++ {
		select {
		case <-s.life.Closed():
			return nil
		case <-timer.C:
		}
		l, err := s.provider.Listen(addr)
		if err == nil {
			if !s.life.Listen(l) { // Shutdown began: Listen closed l
				return nil
			}
			s.removal.connected()
			s.log.Info("RDMA device back; listening again", zap.String("addr", l.Addr()), zap.Int("attempts", attempts))
			return l
		}
		if ce := s.log.Check(zap.DebugLevel, "cannot listen again yet"); ce != nil {
			ce.Write(zap.String("addr", addr), zap.Error(err), zap.Duration("next_in", wait))
		}
		wait = min(2*wait, s.cfg.RelistenMax)
		timer.Reset(wait)
	}
}
