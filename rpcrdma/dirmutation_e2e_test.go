package rpcrdma_test

import (
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/gonfsrdma/gonfsrdma/nfs/nfstest"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
)

// Directories changed while they are listed, over RPC-over-RDMA on the
// software fabric, on the memory backend (600 entries: its directory
// GETATTR reads the whole directory) and the OS backend (2,500).
func TestNFSDirMutation(t *testing.T) {
	for _, osBackend := range []bool{false, true} {
		name := map[bool]string{false: "Mem", true: "OS"}[osBackend]
		t.Run(name, func(t *testing.T) {
			nfstest.RunCases(t, func(t *testing.T) (oncrpc.Caller, []byte) {
				c, root, _ := nfsOverFabric(t, zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)), osBackend)
				return c, root
			}, nfstest.DirMutationCases(map[bool]int{false: 600, true: 2500}[osBackend]))
		})
	}
}
