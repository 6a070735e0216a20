package verbs

import (
	"errors"
	"time"
)

// QPAttributes are the transport attributes a connected queue pair ended
// up with (ibv_query_qp after the connection is established): what the
// connection manager and the peer's request made of it, which decides how
// the queue pair recovers from a lost packet.
type QPAttributes struct {
	// Timeout is the local ACK timeout exponent (IB spec 9.7.6.1.3):
	// 4.096 µs × 2^Timeout before a request without an acknowledgement is
	// resent. 0 means never: a lost last packet stalls the queue pair.
	Timeout uint8
	// RetryCount is how often a request is resent before the queue pair
	// fails with IBV_WC_RETRY_EXC_ERR; RNRRetry the same for a peer with
	// no Receive posted (7: forever).
	RetryCount, RNRRetry uint8
	// MaxReadAtomic is the RDMA Reads this side may have in flight
	// (max_rd_atomic), MaxDestReadAtomic those it serves for the peer
	// (max_dest_rd_atomic).
	MaxReadAtomic, MaxDestReadAtomic uint8
	// PathMTU is the path MTU in bytes.
	PathMTU int
}

// AckTimeout is the time Timeout stands for, 0 for never.
func (a QPAttributes) AckTimeout() time.Duration {
	if a.Timeout == 0 {
		return 0
	}
	return time.Duration(4096<<a.Timeout) * time.Nanosecond
}

// AckTimeoutExponent is the smallest local ACK timeout exponent
// (QPAttributes.Timeout, Config.AckTimeout) whose time, 4.096 µs × 2^n, is
// at least d: 1 for d of 8.192 µs or less, at most 31 (2.4 hours).
func AckTimeoutExponent(d time.Duration) uint8 {
	n := uint8(1)
	for n < 31 && time.Duration(4096<<n)*time.Nanosecond < d {
		n++
	}
	return n
}

// QPQuerier is implemented by connections whose queue pair can be
// queried (the real provider).
type QPQuerier interface {
	QueryQP() (QPAttributes, error)
}

// ErrQueryUnsupported is QueryQP's error for a connection without a
// queue pair to query (the software fabric).
var ErrQueryUnsupported = errors.New("verbs: the connection has no queue pair attributes to query")

// QueryQP returns c's queue pair attributes (ibv_query_qp).
func QueryQP(c Conn) (QPAttributes, error) {
	if q, ok := c.(QPQuerier); ok {
		return q.QueryQP()
	}
	return QPAttributes{}, ErrQueryUnsupported
}
