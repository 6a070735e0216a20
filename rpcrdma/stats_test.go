package rpcrdma

import (
	"fmt"
	"testing"

	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	rdmaclient "github.com/gonfsrdma/gonfsrdma/rpcrdma/client"
)

// TestCountsPerConnection checks the counters kept per connection: the
// credits in use are the calls the connections hold now, and a
// connection that ends leaves its inline bytes, copies and
// completion-loop calls in the server's totals, nothing lost or counted
// twice.
func TestCountsPerConnection(t *testing.T) {
	e := newEnv(t, Config{Credits: 8})
	ctx := ctxT(t)
	c1, c2 := e.dial(rdmaclient.Config{}), e.dial(rdmaclient.Config{})
	for _, c := range []*rdmaclient.Client{c1, c2} {
		// The client may send one call until a reply grants more credits.
		if _, err := c.Call(ctx, &oncrpc.ClientCall{Prog: echoProg, Vers: echoVers, Proc: procNull}); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 3)
	for _, c := range []*rdmaclient.Client{c1, c1, c2} {
		go func() {
			_, err := c.Call(ctx, &oncrpc.ClientCall{Prog: echoProg, Vers: echoVers, Proc: procBlock})
			done <- err
		}()
	}
	waitFor(t, "3 BLOCK calls running", func() bool { return e.echo.blocked.Load() == 3 }, func() string { return fmt.Sprint(e.echo.blocked.Load()) })
	k := e.srv.Counts()
	if k.CreditsInUse != 3 || k.CreditsGranted != 16 {
		t.Fatalf("3 calls held on 2 connections of 8 credits: in use %d, granted %d", k.CreditsInUse, k.CreditsGranted)
	}
	if k.InlineRecvBytes == 0 || k.InlineSendBytes == 0 || k.CompletionLoopCalls != 2 {
		t.Fatalf("inline bytes in %d, out %d, completion-loop calls %d (want the 2 NULLs)", k.InlineRecvBytes, k.InlineSendBytes, k.CompletionLoopCalls)
	}
	close(e.echo.unblock)
	for range 3 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "no call in use", func() bool { return e.srv.Counts().CreditsInUse == 0 }, func() string { return fmt.Sprint(e.srv.Counts().CreditsInUse) })
	before := e.srv.Counts()
	c2.Close()
	waitFor(t, "one connection left", func() bool { return e.srv.Stats().Conns == 1 }, func() string { return fmt.Sprint(e.srv.Stats().Conns) })
	after := e.srv.Counts()
	if after.InlineRecvBytes != before.InlineRecvBytes || after.InlineSendBytes != before.InlineSendBytes ||
		after.CopiedBytes != before.CopiedBytes || after.CompletionLoopCalls != before.CompletionLoopCalls {
		t.Fatalf("a connection's end changed the totals: before %+v, after %+v", before, after)
	}
	if after.Disconnects != before.Disconnects+1 || after.CreditsGranted != 8 {
		t.Fatalf("after one disconnect: %d disconnects (was %d), %d credits granted", after.Disconnects, before.Disconnects, after.CreditsGranted)
	}
	if _, err := c1.Call(ctx, &oncrpc.ClientCall{Prog: echoProg, Vers: echoVers, Proc: procNull}); err != nil {
		t.Fatal(err)
	}
	if k := e.srv.Counts(); k.CompletionLoopCalls != before.CompletionLoopCalls+1 || k.InlineRecvBytes <= after.InlineRecvBytes {
		t.Fatalf("a call after the disconnect: %+v", k)
	}
}
