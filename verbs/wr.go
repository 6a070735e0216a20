package verbs

// SGE is one scatter/gather entry, laid out exactly like struct ibv_sge:
// Length bytes at virtual address Addr inside the MR whose local key is
// LKey. Build it with (*MR).SGE.
type SGE struct {
	Addr   uint64
	Length uint32
	LKey   uint32
}

// Access flags of a memory region (enum ibv_access_flags values).
type Access int

const (
	AccessLocalWrite  Access = 1 // IBV_ACCESS_LOCAL_WRITE: Receives and RDMA Read targets
	AccessRemoteWrite Access = 2 // IBV_ACCESS_REMOTE_WRITE: the peer may RDMA Write here
	AccessRemoteRead  Access = 4 // IBV_ACCESS_REMOTE_READ: the peer may RDMA Read here
)

// WROpcode is a send-queue work request opcode (enum ibv_wr_opcode values).
type WROpcode uint32

const (
	OpRDMAWrite   WROpcode = 0 // IBV_WR_RDMA_WRITE: gather SGL, write to RemoteAddr/RKey
	OpSend        WROpcode = 2 // IBV_WR_SEND: consumes the peer's next Receive
	OpRDMARead    WROpcode = 4 // IBV_WR_RDMA_READ: read RemoteAddr/RKey, scatter into SGL
	OpSendWithInv WROpcode = 9 // IBV_WR_SEND_WITH_INV: Send, and invalidate InvalidateRKey at the peer
)

func (o WROpcode) String() string {
	switch o {
	case OpRDMAWrite:
		return "RDMA_WRITE"
	case OpSend:
		return "SEND"
	case OpRDMARead:
		return "RDMA_READ"
	case OpSendWithInv:
		return "SEND_WITH_INV"
	case OpLocalInv:
		return "LOCAL_INV"
	case OpBindMW:
		return "BIND_MW"
	}
	return "WR_OPCODE(" + itoa(int(o)) + ")"
}

// SendWR is a send-queue work request (struct ibv_send_wr).
type SendWR struct {
	// ID is returned in the Completion (wr_id). It is the caller's: an
	// index into its own table, never a pointer. IDs at or above
	// ReservedWRID are reserved for the provider.
	ID     uint64
	Opcode WROpcode
	// SGL gathers the data to Send or RDMA Write, or scatters the data an
	// RDMA Read returns. At most Config.MaxSendSGE entries.
	SGL []SGE
	// Signaled requests a completion on success (IBV_SEND_SIGNALED). An
	// unsignaled WR keeps its send-queue slot until a later signaled WR
	// completes. Failed and flushed WRs always complete.
	Signaled bool
	// RemoteAddr and RKey name the peer's memory for RDMA Read/Write.
	RemoteAddr uint64
	RKey       uint32
	// InvalidateRKey is the peer's rkey that OpSendWithInv invalidates,
	// or this side's window rkey that OpLocalInv invalidates.
	InvalidateRKey uint32
	// Bind is the window binding of an OpBindMW (see Window).
	Bind WindowBind
}

// RecvWR is a Receive work request (struct ibv_recv_wr). An incoming Send
// is scattered into SGL, which must be large enough for it.
type RecvWR struct {
	ID  uint64
	SGL []SGE
}

// ReservedWRID is the lowest work request ID the provider reserves for its
// own drain markers; callers must use smaller IDs.
const ReservedWRID = ^uint64(0) - 1

// itoa avoids importing strconv for a few String methods.
func itoa(v int) string {
	if v == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	neg := v < 0
	if neg {
		v = -v
	}
	for v > 0 {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}
