//go:build !linux || !cgo || nordma

package verbs

import "context"

// RDMAProvider is real RDMA through librdmacm and libibverbs. This build
// has no RDMA support: NewRDMAProvider returns ErrNoRDMA.
type RDMAProvider struct{}

var _ Provider = (*RDMAProvider)(nil)

// RDMASupported reports whether this build includes real RDMA support.
const RDMASupported = false

// NewRDMAProvider returns ErrNoRDMA in this build.
func NewRDMAProvider() (*RDMAProvider, error) { return nil, ErrNoRDMA }

// Listen returns ErrNoRDMA.
func (*RDMAProvider) Listen(addr string) (Listener, error) { return nil, ErrNoRDMA }

// Dial returns ErrNoRDMA.
func (*RDMAProvider) Dial(ctx context.Context, addr string, p ConnParams) (Conn, error) {
	return nil, ErrNoRDMA
}

// Close does nothing.
func (*RDMAProvider) Close() error { return nil }
