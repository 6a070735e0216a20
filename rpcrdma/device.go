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

// isWarned reports whether a removal was logged and RDMA has not worked
// since.
func (r *deviceRemoval) isWarned() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.warned
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
	if h, ok := s.provider.(heldReporter); ok {
		s.life.Go(func() { s.watchRelease(h, device) })
	}
}

// heldReporter is a provider that counts what it holds on its devices
// (verbs.RDMAProvider.Held).
type heldReporter interface{ Held() (ids, mrs int64) }

// releaseWait is how long watchRelease waits for the provider to let go
// of everything after a removal before it warns.
const releaseWait = 20 * time.Second

// watchRelease reports, after a removal, whether the provider let go of
// every cm id and memory registration (the kernel cannot finish removing
// the device before): INFO when it has, WARN with what is left if it has
// not after releaseWait. While RDMA is down nothing of the server should
// be on any device; a listener back on a new device ends the watch.
func (s *Server) watchRelease(h heldReporter, device string) {
	t0 := time.Now()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		ids, mrs := h.Held()
		if ids == 0 && mrs == 0 {
			s.log.Info("RDMA device let go of: no cm id or memory registration left", zap.String("device", device), zap.Duration("after", time.Since(t0).Round(time.Millisecond)))
			return
		}
		if time.Since(t0) > releaseWait || !s.removal.isWarned() {
			if s.removal.isWarned() {
				s.log.Warn("RDMA device removal: the server still holds resources, so the kernel cannot finish removing the device", zap.String("device", device), zap.Int64("cm_ids", ids), zap.Int64("memory_registrations", mrs))
			}
			return
		}
		select {
		case <-tick.C:
		case <-s.life.Closed():
			return
		}
	}
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
