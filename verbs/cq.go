package verbs

// Completion is one work completion (struct ibv_wc), from either the send
// or the receive completion queue of a Conn.
type Completion struct {
	WRID   uint64
	Status WCStatus
	// Opcode is valid only when Status is WCSuccess (as in libibverbs).
	Opcode WCOpcode
	// Recv reports that the completion belongs to a Receive WR. Unlike
	// Opcode it is valid for failed and flushed completions too.
	Recv bool
	// ByteLen is the number of bytes received (Receive) or transferred
	// (RDMA Read).
	ByteLen uint32
	// Invalidated reports that the Send which consumed this Receive was a
	// Send-With-Invalidate (IBV_WC_WITH_INV) and InvalidatedRKey is the
	// rkey it invalidated.
	Invalidated     bool
	InvalidatedRKey uint32
	VendorErr       uint32
}

// Err returns nil for a successful completion and a *WCError otherwise.
func (c *Completion) Err() error {
	if c.Status == WCSuccess {
		return nil
	}
	return &WCError{Status: c.Status, WRID: c.WRID, Recv: c.Recv, VendorErr: c.VendorErr}
}

// WCOpcode is a completion opcode (enum ibv_wc_opcode values).
type WCOpcode uint32

const (
	WCSend      WCOpcode = 0   // IBV_WC_SEND (Send and Send-With-Invalidate)
	WCRDMAWrite WCOpcode = 1   // IBV_WC_RDMA_WRITE
	WCRDMARead  WCOpcode = 2   // IBV_WC_RDMA_READ
	WCRecv      WCOpcode = 128 // IBV_WC_RECV
)

func (o WCOpcode) String() string {
	switch o {
	case WCSend:
		return "IBV_WC_SEND"
	case WCRDMAWrite:
		return "IBV_WC_RDMA_WRITE"
	case WCRDMARead:
		return "IBV_WC_RDMA_READ"
	case WCRecv:
		return "IBV_WC_RECV"
	case WCBindMW:
		return "IBV_WC_BIND_MW"
	case WCLocalInv:
		return "IBV_WC_LOCAL_INV"
	}
	return "IBV_WC_OPCODE(" + itoa(int(o)) + ")"
}

// WCStatus is a work completion status (enum ibv_wc_status values). A
// WCStatus is itself an error, so errors.Is(err, WCRemAccessErr) matches a
// *WCError carrying that status.
type WCStatus uint32

const (
	WCSuccess          WCStatus = iota // IBV_WC_SUCCESS
	WCLocLenErr                        // IBV_WC_LOC_LEN_ERR: Receive buffer too small for the Send
	WCLocQPOpErr                       // IBV_WC_LOC_QP_OP_ERR
	WCLocEECOpErr                      // IBV_WC_LOC_EEC_OP_ERR
	WCLocProtErr                       // IBV_WC_LOC_PROT_ERR: bad lkey or SGE outside its MR
	WCWRFlushErr                       // IBV_WC_WR_FLUSH_ERR: QP in error state, WR not executed
	WCMWBindErr                        // IBV_WC_MW_BIND_ERR
	WCBadRespErr                       // IBV_WC_BAD_RESP_ERR
	WCLocAccessErr                     // IBV_WC_LOC_ACCESS_ERR
	WCRemInvReqErr                     // IBV_WC_REM_INV_REQ_ERR: the responder rejected the request (e.g. too long)
	WCRemAccessErr                     // IBV_WC_REM_ACCESS_ERR: bad rkey or remote bounds
	WCRemOpErr                         // IBV_WC_REM_OP_ERR
	WCRetryExcErr                      // IBV_WC_RETRY_EXC_ERR
	WCRNRRetryExcErr                   // IBV_WC_RNR_RETRY_EXC_ERR: no Receive posted at the peer
	WCLocRDDViolErr                    // IBV_WC_LOC_RDD_VIOL_ERR
	WCRemInvRDReqErr                   // IBV_WC_REM_INV_RD_REQ_ERR
	WCRemAbortErr                      // IBV_WC_REM_ABORT_ERR
	WCInvEECNErr                       // IBV_WC_INV_EECN_ERR
	WCInvEECStateErr                   // IBV_WC_INV_EEC_STATE_ERR
	WCFatalErr                         // IBV_WC_FATAL_ERR
	WCRespTimeoutErr                   // IBV_WC_RESP_TIMEOUT_ERR
	WCGeneralErr                       // IBV_WC_GENERAL_ERR
	WCTMErr                            // IBV_WC_TM_ERR
	WCTMRndvIncomplete                 // IBV_WC_TM_RNDV_INCOMPLETE
)

var wcStatusNames = [...]struct{ name, desc string }{
	{"IBV_WC_SUCCESS", "success"},
	{"IBV_WC_LOC_LEN_ERR", "local length error"},
	{"IBV_WC_LOC_QP_OP_ERR", "local QP operation error"},
	{"IBV_WC_LOC_EEC_OP_ERR", "local EE context operation error"},
	{"IBV_WC_LOC_PROT_ERR", "local protection error"},
	{"IBV_WC_WR_FLUSH_ERR", "Work Request Flushed Error"},
	{"IBV_WC_MW_BIND_ERR", "memory management operation error"},
	{"IBV_WC_BAD_RESP_ERR", "bad response error"},
	{"IBV_WC_LOC_ACCESS_ERR", "local access error"},
	{"IBV_WC_REM_INV_REQ_ERR", "remote invalid request error"},
	{"IBV_WC_REM_ACCESS_ERR", "remote access error"},
	{"IBV_WC_REM_OP_ERR", "remote operation error"},
	{"IBV_WC_RETRY_EXC_ERR", "transport retry counter exceeded"},
	{"IBV_WC_RNR_RETRY_EXC_ERR", "RNR retry counter exceeded"},
	{"IBV_WC_LOC_RDD_VIOL_ERR", "local RDD violation error"},
	{"IBV_WC_REM_INV_RD_REQ_ERR", "remote invalid RD request"},
	{"IBV_WC_REM_ABORT_ERR", "aborted error"},
	{"IBV_WC_INV_EECN_ERR", "invalid EE context number"},
	{"IBV_WC_INV_EEC_STATE_ERR", "invalid EE context state"},
	{"IBV_WC_FATAL_ERR", "fatal error"},
	{"IBV_WC_RESP_TIMEOUT_ERR", "response timeout error"},
	{"IBV_WC_GENERAL_ERR", "general error"},
	{"IBV_WC_TM_ERR", "TM error"},
	{"IBV_WC_TM_RNDV_INCOMPLETE", "TM software rendezvous"},
}

// String returns the libibverbs enum name, e.g. "IBV_WC_REM_ACCESS_ERR".
func (s WCStatus) String() string {
	if int(s) < len(wcStatusNames) {
		return wcStatusNames[s].name
	}
	return "IBV_WC_STATUS(" + itoa(int(s)) + ")"
}

// Description returns ibv_wc_status_str's text, e.g. "remote access error".
func (s WCStatus) Description() string {
	if int(s) < len(wcStatusNames) {
		return wcStatusNames[s].desc
	}
	return "unknown"
}

// Error makes a WCStatus usable as an errors.Is target.
func (s WCStatus) Error() string { return "verbs: " + s.String() + " (" + s.Description() + ")" }
