package softfabric

// Device removal (RDMA_CM_EVENT_DEVICE_REMOVAL), injected
// deterministically: each host of the fabric (the host part of an
// address, "fabric-a" in "fabric-a:20049") is one device. RemoveDevice
// takes a host's device away as `rdma link delete rxe0`, a NIC reset or a
// hot-unplug does: every queue pair whose local address is on the host
// dies with a *verbs.DeviceRemovedError (its peer sees a disconnect), every
// listener on the host returns one from GetRequest and refuses further
// requests, and until AddDevice brings the device back, Listen on the host
// fails and connection requests to it are refused as when nobody listens.
// Objects on the removed device stay counted in Stats until their owner
// frees them (Close, Deregister, Free), so a test can check that the
// owner released everything.
//
// Buffer ownership: none of its own; the flushed work requests give their
// buffers back through the completion queues, as any teardown does.

import (
	"errors"
	"net"

	"github.com/gonfsrdma/gonfsrdma/verbs"
)

// errNoDevice is Listen's error on a host whose device is removed (as
// rdma_bind_addr fails on an address no RDMA device carries).
var errNoDevice = errors.New("verbs: fabric: no RDMA device for the address")

// hostOf is the host part of a fabric address.
func hostOf(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
}

// DeviceName is the name a removed device is reported by for host.
func DeviceName(host string) string { return "fabric-" + host }

// RemoveDevice removes host's device: see the top of this file. It returns
// once every queue pair on it is dead and every listener on it reports
// the removal. Removing a removed device does nothing.
func (f *Fabric) RemoveDevice(host string) {
	f.mu.Lock()
	if f.removed[host] {
		f.mu.Unlock()
		return
	}
	if f.removed == nil {
		f.removed = make(map[string]bool)
	}
	f.removed[host] = true
	var lns []*fabListener
	for addr, ln := range f.listeners {
		if hostOf(addr) == host {
			lns = append(lns, ln)
		}
	}
	var victims []*fabConn
	for c := range f.conns {
		if hostOf(c.local) == host {
			victims = append(victims, c)
		}
	}
	f.mu.Unlock()
	reason := &verbs.DeviceRemovedError{Device: DeviceName(host)}
	for _, ln := range lns {
		ln.deviceRemoved(reason)
	}
	for _, c := range victims {
		c.l.mu.Lock()
		c.l.teardown(c, reason, verbs.ErrDisconnected)
		c.l.mu.Unlock()
	}
}

// AddDevice brings host's device back: Listen on the host works again.
// Listeners and queue pairs of the removed device stay dead.
func (f *Fabric) AddDevice(host string) {
	f.mu.Lock()
	delete(f.removed, host)
	f.mu.Unlock()
}

// deviceRemoved ends the listener: GetRequest returns reason, and the
// requests not yet taken are refused. The listener stays registered under
// its address until Close, as the listening id stays until
// rdma_destroy_id.
func (ln *fabListener) deviceRemoved(reason error) {
	ln.mu.Lock()
	if ln.removedErr != nil || ln.closed {
		ln.mu.Unlock()
		return
	}
	ln.removedErr = reason
	close(ln.removed)
	ln.mu.Unlock()
	for {
		select {
		case r := <-ln.reqs:
			r.Reject(nil)
		default:
			return
		}
	}
}
