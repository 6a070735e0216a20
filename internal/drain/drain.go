package drain

import (
	"context"
	"sync"
)

// Wait waits until wg is done, then calls cancel and returns nil. If ctx
// ends first, it calls cancel, then force (which should close every
// connection at once), waits for wg all the same and returns ctx.Err().
func Wait(ctx context.Context, wg *sync.WaitGroup, cancel context.CancelFunc, force func()) error {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		cancel()
		return nil
	case <-ctx.Done():
		cancel()
		force()
		<-done
		return ctx.Err()
	}
}
