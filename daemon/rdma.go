package daemon

import (
	"context"
	"errors"
	"fmt"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/gonfsrdma/gonfsrdma/metrics/meter"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/rpcrdma"
	"github.com/gonfsrdma/gonfsrdma/verbs"
)

// rdmaServer is what the daemon needs of the RPC-over-RDMA listener.
type rdmaServer interface {
	Shutdown(ctx context.Context) error
}

// rdmaService is the RPC-over-RDMA server with the provider it owns.
type rdmaService struct {
	srv      *rpcrdma.Server
	provider verbs.Provider
	done     chan struct{}
}

func (r *rdmaService) Shutdown(ctx context.Context) error {
	err := r.srv.Shutdown(ctx)
	<-r.done
	if c, ok := r.provider.(interface{ Close() error }); ok {
		err = errors.Join(err, c.Close())
	}
	return err
}

// earlyRDMA is the outcome of verbs.NewRDMAProvider, asked by Start
// before it serves anything; taken once startRDMA owns the provider.
type earlyRDMA struct {
	p     *verbs.RDMAProvider
	err   error
	taken bool
}

// startRDMA starts NFS over RPC-over-RDMA on cfg.RDMAAddr. Without RDMA
// (no device, or a build without it) it logs one line and returns nil so
// TCP carries on, unless cfg.RequireRDMA.
// The reason RDMA is not served, when it is not and that is not fatal,
// goes to *whyNot (the start-up summary says it).
func startRDMA(_ context.Context, log *zap.Logger, cfg Config, early *earlyRDMA, disp *oncrpc.Dispatcher, limits *oncrpc.Limits, clients *meter.Clients, whyNot *error) (rdmaServer, uint16, error) {
	if cfg.RDMAAddr == "" {
		log.Info("RDMA disabled (--rdma-listen is empty)")
		return nil, 0, nil
	}
	unavailable := func(err error) (rdmaServer, uint16, error) {
		if cfg.RequireRDMA {
			return nil, 0, fmt.Errorf("RDMA on %s: %w", cfg.RDMAAddr, err)
		}
		log.Warn("RDMA unavailable; serving NFS over TCP only", zap.String("rdma_listen", cfg.RDMAAddr), zap.Error(err))
		*whyNot = err
		return nil, 0, nil
	}
	provider := cfg.RDMAProvider
	if provider == nil {
		p, err := early.p, early.err
		if p == nil && err == nil {
			p, err = verbs.NewRDMAProvider()
		}
		if err != nil {
			return unavailable(err)
		}
		early.taken = true
		provider = p
	}
	rcfg := rpcrdma.Config{Credits: cfg.RDMACredits, InlineRecv: cfg.RDMAInline, InlineSend: cfg.RDMAInline,
		Conns: limits, MaxPinned: cfg.RDMAMaxPinned, IdleTimeout: cfg.IdleTimeout, AckTimeout: cfg.RDMAAckTimeout, Clients: clients,
		// As knfsd (svc_rdma_get_inv_rkey): when the client's private
		// data accepts it (the Linux client's always does), a reply whose
		// call used one steering tag invalidates it, so the client
		// needs no local invalidation per READ or WRITE.
		SendWithInvalidate: true}
	// Registered memory is pinned: each connection keeps credits Receive
	// and Send buffers, plus bulk buffers for calls in flight.
	need := uint64(max(cfg.RDMACredits, rpcrdma.DefaultCredits)) * uint64(2*max(cfg.RDMAInline, rpcrdma.DefaultInlineSize)+rpcrdma.DefaultMaxRecord)
	if err := verbs.RaiseMemlock(need); err != nil {
		if cfg.RDMAProvider == nil {
			return unavailable(err)
		}
	}
	if verbs.PinsMemory(provider) {
		// The software fabric pins nothing, so RLIMIT_MEMLOCK does not
		// bound it.
		rcfg.MaxPinned = fitMemlock(log, rcfg.MaxPinned)
	}
	l, err := provider.Listen(cfg.RDMAAddr)
	if err != nil {
		if c, ok := provider.(interface{ Close() error }); ok && cfg.RDMAProvider == nil {
			c.Close()
		}
		return unavailable(err)
	}
	srv := rpcrdma.NewServer(log.Named("rdma"), disp, provider, rcfg)
	svc := &rdmaService{srv: srv, provider: provider, done: make(chan struct{})}
	if cfg.RDMAProvider != nil {
		svc.provider = nil // the caller owns an injected provider
	}
	go func() {
		defer close(svc.done)
		if err := srv.Serve(l); err != nil && !errors.Is(err, rpcrdma.ErrServerClosed) {
			log.Error("RDMA listener failed", zap.Error(err))
		}
	}()
	log.Info("listening", zap.String("nfs_rdma", l.Addr()))
	return svc, portOf(l.Addr()), nil
}

// fitMemlock returns the pinned-memory cap (0: rpcrdma's default) lowered
// to RLIMIT_MEMLOCK when that is smaller, so the cap rejects connections
// before registrations fail.
func fitMemlock(log *zap.Logger, maxPinned int64) int64 {
	if maxPinned <= 0 {
		maxPinned = rpcrdma.DefaultMaxPinned
	}
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &lim); err != nil || lim.Cur == unix.RLIM_INFINITY || lim.Cur >= uint64(maxPinned) {
		return maxPinned
	}
	log.Info("RDMA pinned memory capped at RLIMIT_MEMLOCK", zap.Uint64("memlock", lim.Cur), zap.Int64("max_pinned", maxPinned))
	return int64(lim.Cur)
}
