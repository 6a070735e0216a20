//go:build ceph && linux && cgo

package cephfs

import "sync/atomic"

// Calls counts the libcephfs calls an FS has made, by kind, since it was
// mounted: what each NFS procedure costs in calls into libcephfs (the
// counting tests hold every procedure to its budget; docs/performance.md,
// "CephFS table"). A getattr, lookup or open that libcephfs answers from
// its cache costs no MDS round trip but still takes the client's lock.
type Calls struct {
	Getattr    uint64 // ceph_ll_getattr
	Setattr    uint64 // ceph_ll_setattr
	Lookup     uint64 // ceph_ll_lookup (by name)
	LookupVino uint64 // ceph_ll_lookup_vino (a handle not cached)
	Open       uint64 // ceph_ll_open
	Close      uint64 // ceph_ll_close
	Read       uint64 // ceph_ll_read
	Write      uint64 // ceph_ll_write
	Create     uint64 // ceph_ll_create
	Unlink     uint64 // ceph_ll_unlink
	Sync       uint64 // ceph_ll_fsync, ceph_ll_sync_inode
}

// callKind indexes FS.calls.
type callKind int

const (
	callGetattr callKind = iota
	callSetattr
	callLookup
	callLookupVino
	callOpen
	callClose
	callRead
	callWrite
	callCreate
	callUnlink
	callSync
	numCallKinds
)

// callCounts is the FS's counters: one atomic add per libcephfs call,
// which costs microseconds.
type callCounts [numCallKinds]atomic.Uint64

func (c *callCounts) add(k callKind) { c[k].Add(1) }

// Calls returns the libcephfs calls f has made so far.
func (f *FS) Calls() Calls {
	c := &f.calls
	return Calls{
		Getattr: c[callGetattr].Load(), Setattr: c[callSetattr].Load(),
		Lookup: c[callLookup].Load(), LookupVino: c[callLookupVino].Load(),
		Open: c[callOpen].Load(), Close: c[callClose].Load(),
		Read: c[callRead].Load(), Write: c[callWrite].Load(),
		Create: c[callCreate].Load(), Unlink: c[callUnlink].Load(),
		Sync: c[callSync].Load(),
	}
}

// Sub returns c minus an earlier reading.
func (c Calls) Sub(before Calls) Calls {
	return Calls{
		Getattr: c.Getattr - before.Getattr, Setattr: c.Setattr - before.Setattr,
		Lookup: c.Lookup - before.Lookup, LookupVino: c.LookupVino - before.LookupVino,
		Open: c.Open - before.Open, Close: c.Close - before.Close,
		Read: c.Read - before.Read, Write: c.Write - before.Write,
		Create: c.Create - before.Create, Unlink: c.Unlink - before.Unlink,
		Sync: c.Sync - before.Sync,
	}
}
