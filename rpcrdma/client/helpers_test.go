package client

import (
	"context"
	"testing"
	"time"
)

// The program the raw test server of client_keys_test.go answers (the
// numbers of the server package's echo program).
const (
	echoProg  = 0x40000099
	echoVers  = 1
	procRead  = 2
	procWrite = 3
)

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// pattern fills b with bytes derived from seed.
func pattern(seed uint32, b []byte) {
	x := seed*2654435761 + 1
	for i := range b {
		x = x*1103515245 + 12345
		b[i] = byte(x >> 16)
	}
}
