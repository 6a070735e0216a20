package verbs

import "errors"

// Sentinel errors.
var (
	// ErrNoRDMA is returned by NewRDMAProvider in builds without RDMA
	// support (not linux, CGO_ENABLED=0, or the nordma build tag).
	ErrNoRDMA = errors.New("verbs: built without RDMA support")
	// ErrNoDevice: librdmacm sees no RDMA device.
	ErrNoDevice = errors.New("verbs: no RDMA device found")
	// ErrClosed: the Conn or Listener was closed by this side.
	ErrClosed = errors.New("verbs: use of closed connection")
	// ErrDisconnected: a disconnect (by either side) ended the connection.
	ErrDisconnected = errors.New("verbs: disconnected")
	// ErrDeviceRemoved: RDMA_CM_EVENT_DEVICE_REMOVAL. A Conn or Listener
	// on a removed device reports a *DeviceRemovedError, which matches it.
	ErrDeviceRemoved = errors.New("verbs: RDMA device removed")
	// ErrNotConnected: PostSend before the connection is established, or
	// Accept on a request that the peer abandoned.
	ErrNotConnected = errors.New("verbs: queue pair not connected")
	// ErrQueueFull: posting would exceed MaxSendWR/MaxRecvWR (ENOMEM from
	// ibv_post_send/ibv_post_recv).
	ErrQueueFull = errors.New("verbs: work queue full")
	// ErrInvalidWR: a work request has too many SGEs or a bad opcode.
	ErrInvalidWR = errors.New("verbs: invalid work request")
	// ErrPrivateDataTooLong: private data over the CM limit.
	ErrPrivateDataTooLong = errors.New("verbs: private data too long")

	errInvalidConfig = errors.New("verbs: invalid queue configuration")
)

// WCError is a work request that completed in error. It unwraps to its
// Status, so errors.Is(err, WCRNRRetryExcErr) works.
type WCError struct {
	Status    WCStatus
	WRID      uint64
	Recv      bool // the WR was a Receive
	VendorErr uint32
}

func (e *WCError) Error() string {
	q := "send"
	if e.Recv {
		q = "recv"
	}
	return "verbs: " + q + " work request " + itoa(int(e.WRID)) + " failed: " +
		e.Status.String() + " (" + e.Status.Description() + ")"
}

func (e *WCError) Unwrap() error { return e.Status }

// AsyncEvent is an affiliated or unaffiliated asynchronous event (enum
// ibv_event_type values).
type AsyncEvent uint32

const (
	EventCQErr            AsyncEvent = iota // IBV_EVENT_CQ_ERR
	EventQPFatal                            // IBV_EVENT_QP_FATAL
	EventQPReqErr                           // IBV_EVENT_QP_REQ_ERR
	EventQPAccessErr                        // IBV_EVENT_QP_ACCESS_ERR: the peer violated our MR's rkey/bounds
	EventCommEst                            // IBV_EVENT_COMM_EST
	EventSQDrained                          // IBV_EVENT_SQ_DRAINED
	EventPathMig                            // IBV_EVENT_PATH_MIG
	EventPathMigErr                         // IBV_EVENT_PATH_MIG_ERR
	EventDeviceFatal                        // IBV_EVENT_DEVICE_FATAL
	EventPortActive                         // IBV_EVENT_PORT_ACTIVE
	EventPortErr                            // IBV_EVENT_PORT_ERR
	EventLIDChange                          // IBV_EVENT_LID_CHANGE
	EventPKeyChange                         // IBV_EVENT_PKEY_CHANGE
	EventSMChange                           // IBV_EVENT_SM_CHANGE
	EventSRQErr                             // IBV_EVENT_SRQ_ERR
	EventSRQLimitReached                    // IBV_EVENT_SRQ_LIMIT_REACHED
	EventQPLastWQEReached                   // IBV_EVENT_QP_LAST_WQE_REACHED
	EventClientReregister                   // IBV_EVENT_CLIENT_REREGISTER
	EventGIDChange                          // IBV_EVENT_GID_CHANGE
	EventWQFatal                            // IBV_EVENT_WQ_FATAL
)

var asyncEventNames = [...]struct{ name, desc string }{
	{"IBV_EVENT_CQ_ERR", "CQ error"},
	{"IBV_EVENT_QP_FATAL", "local work queue catastrophic error"},
	{"IBV_EVENT_QP_REQ_ERR", "invalid request local work queue error"},
	{"IBV_EVENT_QP_ACCESS_ERR", "local access violation work queue error"},
	{"IBV_EVENT_COMM_EST", "communication established"},
	{"IBV_EVENT_SQ_DRAINED", "send queue drained"},
	{"IBV_EVENT_PATH_MIG", "path migrated"},
	{"IBV_EVENT_PATH_MIG_ERR", "path migration request error"},
	{"IBV_EVENT_DEVICE_FATAL", "local catastrophic error"},
	{"IBV_EVENT_PORT_ACTIVE", "port active"},
	{"IBV_EVENT_PORT_ERR", "port error"},
	{"IBV_EVENT_LID_CHANGE", "LID change"},
	{"IBV_EVENT_PKEY_CHANGE", "P_Key change"},
	{"IBV_EVENT_SM_CHANGE", "SM change"},
	{"IBV_EVENT_SRQ_ERR", "SRQ catastrophic error"},
	{"IBV_EVENT_SRQ_LIMIT_REACHED", "SRQ limit reached"},
	{"IBV_EVENT_QP_LAST_WQE_REACHED", "last WQE reached"},
	{"IBV_EVENT_CLIENT_REREGISTER", "client reregistration"},
	{"IBV_EVENT_GID_CHANGE", "GID table change"},
	{"IBV_EVENT_WQ_FATAL", "WQ fatal"},
}

func (e AsyncEvent) String() string {
	if int(e) < len(asyncEventNames) {
		return asyncEventNames[e].name
	}
	return "IBV_EVENT(" + itoa(int(e)) + ")"
}

// Description returns ibv_event_type_str's text.
func (e AsyncEvent) Description() string {
	if int(e) < len(asyncEventNames) {
		return asyncEventNames[e].desc
	}
	return "unknown"
}

// AsyncEventError is the reason of a connection killed by a fatal
// asynchronous event on its QP or CQ.
type AsyncEventError struct{ Event AsyncEvent }

func (e *AsyncEventError) Error() string {
	return "verbs: async event " + e.Event.String() + " (" + e.Event.Description() + ")"
}

// DeviceRemovedError is the reason of a Conn, and the error of a
// Listener's GetRequest, whose RDMA device went away
// (RDMA_CM_EVENT_DEVICE_REMOVAL: the device was unregistered, its driver
// reset or unloaded, the NIC unplugged). errors.Is(err, ErrDeviceRemoved)
// matches it. The device is freed only once every object on it is gone:
// Close every Conn and the Listener, and Deregister every MR.
type DeviceRemovedError struct {
	// Device is the device's name (ibv_get_device_name: "rxe0",
	// "mlx5_0"), or the fabric's name for it; empty when unknown.
	Device string
}

func (e *DeviceRemovedError) Error() string {
	if e.Device == "" {
		return ErrDeviceRemoved.Error()
	}
	return "verbs: RDMA device " + e.Device + " removed"
}

// Is makes errors.Is(err, ErrDeviceRemoved) true.
func (e *DeviceRemovedError) Is(target error) bool { return target == ErrDeviceRemoved }

// RejectError is returned by Dial when the peer rejected the connection or
// nobody listens at the address.
type RejectError struct {
	// Status is the CM reject reason (IB CM: 28 = consumer reject,
	// 8 = invalid service ID, i.e. no listener).
	Status int
	// PrivateData is the REJ's private data (nil if none).
	PrivateData []byte
}

// CM reject reasons used by the providers.
const (
	RejectInvalidServiceID = 8  // IB_CM_REJ_INVALID_SERVICE_ID: no listener
	RejectConsumer         = 28 // IB_CM_REJ_CONSUMER_DEFINED: rdma_reject
)

func (e *RejectError) Error() string {
	return "verbs: connection rejected (reason " + itoa(e.Status) + ")"
}

// PostError reports a PostSend/PostRecv that failed part-way through a
// chain on a real device: work requests before wrs[Posted] were posted and
// will complete, the rest were not. When no WR was posted the error is
// returned bare (ErrQueueFull, ErrInvalidWR, ...); the software fabric
// validates the whole chain first and never returns a PostError.
type PostError struct {
	Posted int
	Err    error
}

func (e *PostError) Error() string {
	return "verbs: post failed after " + itoa(e.Posted) + " work requests: " + e.Err.Error()
}

func (e *PostError) Unwrap() error { return e.Err }
