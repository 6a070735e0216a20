// Package verbs is the RDMA verbs layer of gonfsrdma: connection
// management (rdma_cm), protection domains, memory regions, completion
// queues and reliable-connected queue pairs behind one Go-native API, and
// its production implementation:
//
//   - NewRDMAProvider: real RDMA through librdmacm and libibverbs (cgo,
//     linux only; the only cgo in the module). Builds without cgo, on other
//     systems or with the nordma tag get a stub whose constructor returns
//     ErrNoRDMA.
//
// The second implementation is its own package, verbs/softfabric: an
// in-process software fabric with the same semantics (rkeys, bounds, RNR,
// length errors, ordering, Send-With-Invalidate, flushes) plus fault
// injection and leak counters, for plain go test; no production binary
// links it. It builds its MRs and Windows through the provider seam in
// provider.go (NewMR, NewWindow, MRReleaser, WindowReleaser, and the
// optional RangeRegistrar, WindowBoundsEnforcer and MemoryPinner), which
// the RDMA provider uses too. verbs/verbstest is the conformance suite
// both pass (hw_test.go runs it on a device).
//
// # Connection set-up
//
// Passive side: Provider.Listen, Listener.GetRequest, then on the
// ConnRequest: Conn(cfg) to create the QP, Register memory and PostRecv
// the Receives, and only then Accept(privateData, initiatorDepth,
// responderResources). Active side: Provider.Dial with ConnParams; post
// Receives in ConnParams.Prepare, which runs after the QP exists and
// before the CM REQ is sent. Private data bytes are opaque here (RFC 8797
// encoding belongs to rpcrdma); the CM may zero-pad what the peer sent.
//
// # Work requests and completions
//
// PostRecv and PostSend take chains ([]RecvWR, []SendWR) whose SGLs are
// built with MR.SGE. A WR's ID is the caller's uint64 (an index into its
// own table), returned in the Completion; IDs >= ReservedWRID are
// reserved. Poll (one goroutine at a time) returns completions of both
// completion queues; Completion.Recv tells which. Sends execute in order:
// RDMA Writes posted before a Send are placed before the peer sees the
// Send. A connection made with Config.LazySend arms only the receive
// completion queue while Poll waits, unless WatchSend holds the send queue's
// armed too: its send-queue completions wait for the next Receive (or the
// connection's death) to be returned, so a buffer of a completed Send stays
// the provider's until then.
//
// # Buffer ownership
//
//   - A buffer named by a posted WR belongs to the provider from the Post
//     call until its Completion is returned by Poll — successful, failed or
//     flushed — or until Conn.Close returns. Do not modify a Send/Write
//     source or read a Receive/Read destination in between. An unsignaled
//     Send's buffer is released by the completion of a later signaled WR
//     on the same QP (or by a flush).
//   - A region whose rkey was given to the peer may be read or written by
//     the peer until the upper protocol says it is done with it (reply
//     sent, or rkey invalidated). To limit that to one use, register the
//     region with AccessMWBind and no remote access, and expose it through
//     a memory window (Conn.AllocWindow, OpBindMW, OpLocalInv; see
//     Window): its rkey is dead once the invalidation completes.
//     Where windows do not bound access to their range (WindowBoundsEnforced
//     false: rxe), register the exact range per use instead
//     (RegisterRange): that MR shares its parent's memory, must be
//     Deregistered before the parent, and its rkey is dead once Deregister
//     returns.
//   - An MR may be Deregistered only when no posted WR names it and the
//     peer no longer uses its rkey; slices into it are invalid after.
//     MRs outlive their Conn: Close does not deregister them (each must be
//     Deregistered; the real provider frees the protection domain, and
//     then the cm id that holds librdmacm's reference on the device's
//     verbs context, after the Conn is closed and its last MR is
//     deregistered).
//
// # Errors and teardown
//
// The first work completion in error (other than a flush) kills the
// connection: the QP moves to the error state, the peer is disconnected,
// every outstanding WR completes with IBV_WC_WR_FLUSH_ERR, Done is closed
// and Err returns the reason (*WCError, *AsyncEventError,
// ErrDisconnected, ErrClosed, ErrDeviceRemoved). A WCStatus is an error
// value, so errors.Is(err, WCRemAccessErr) works. Poll returns (0, Err())
// once every flushed completion has been returned; that is the point at
// which all posted buffers are back with the caller.
//
// The disconnect the dying side sends (a DREQ) is lost when the link is
// down, often the very cause of the failure. The real provider therefore
// keeps a closed connection's cm id, whose QP is already destroyed, until
// the peer answers the disconnect or the connection manager's own
// retries of it run out (MaxDisconnectLinger at most; Close of the
// provider ends it at once; a device removal too): the CM resends the
// DREQ once the link is back, and the peer reconnects at once instead of
// waiting for its RPC timeout on a connection that no longer exists. The
// id counts in RDMAProvider.Held meanwhile.
//
// # Device removal
//
// When the device goes away (RDMA_CM_EVENT_DEVICE_REMOVAL: `rdma link
// delete`, a NIC or firmware reset, a hot-unplug), every Conn on it dies
// with a *DeviceRemovedError (errors.Is ErrDeviceRemoved) and flushes as
// above, and a Listener bound to an address of the device returns one
// from GetRequest and yields nothing more. The kernel frees the device
// only once the user holds nothing on it: Close every such Conn and the
// Listener, Deregister every MR and Free every Window. The real provider
// then lets go of the rest itself (its async-event watcher of the device,
// librdmacm's verbs context of it). Listen on the address again once a
// device carries it. The software fabric injects this with
// softfabric.Fabric.RemoveDevice.
//
// Registered memory is pinned and counts against RLIMIT_MEMLOCK: call
// RaiseMemlock at start-up.
package verbs
