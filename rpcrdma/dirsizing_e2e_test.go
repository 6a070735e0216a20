package rpcrdma_test

import (
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/gonfsrdma/gonfsrdma/nfs/nfstest"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
)

// READDIR and READDIRPLUS pages of up to 1 MiB over RPC-over-RDMA on the
// software fabric (OS backend): the replies go back through the client's
// Reply chunk, full and within the count (the 192 KiB READDIR case runs
// over TCP only: the same server code, creating its files costs seconds).
func TestNFSDirSizing(t *testing.T) {
	nfstest.RunCases(t, func(t *testing.T) (oncrpc.Caller, []byte) {
		c, root, _ := nfsOverFabric(t, zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)), true)
		return c, root
	}, nfstest.DirSizingCases("ReaddirplusFullPage", "ReaddirOnePage"))
}
