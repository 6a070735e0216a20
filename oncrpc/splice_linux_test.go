package oncrpc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// spliceProgram: proc 1 splices (offset u64, count u32, tail u32) from f
// and answers count word, data, padding and, when tail is not zero, the
// tail word; proc 2 echoes its arguments (a copied reply between spliced
// ones); proc 3 splices and then fails, so its pipe holds bytes nobody
// sends.
func spliceProgram(t *testing.T, f *os.File) *Program {
	splice := func(c *Call, r *Reply) (uint32, error) {
		if !r.CanSplice() {
			return 0, errors.New("transport cannot splice")
		}
		rd := xdr.NewReader(c.Args)
		off, count, tail := rd.Uint64(), rd.Uint32(), rd.Uint32()
		if rd.Err() != nil {
			return 0, ErrGarbageArgs
		}
		n, err := r.SpliceFile(int(f.Fd()), int64(off), int(count))
		if err != nil {
			return 0, err
		}
		r.Head = xdr.AppendUint32(r.Head, uint32(n))
		return tail, nil
	}
	return &Program{Prog: 400001, Name: "splice", Versions: []Version{{Vers: 1, Procs: []Procedure{
		{Name: "NULL", Idempotent: true, Handler: func(context.Context, *Call, *Reply) error { return nil }},
		{Name: "SPLICE", Idempotent: true, Handler: func(_ context.Context, c *Call, r *Reply) error {
			tail, err := splice(c, r)
			if tail != 0 {
				r.Tail = xdr.AppendUint32(r.Tail, tail)
			}
			return err
		}},
		{Name: "ECHO", Idempotent: true, Handler: func(_ context.Context, c *Call, r *Reply) error {
			r.Head = append(r.Head, c.Args...)
			return nil
		}},
		{Name: "SPLICE_FAIL", Idempotent: true, Handler: func(_ context.Context, c *Call, r *Reply) error {
			if _, err := splice(c, r); err != nil {
				return err
			}
			return errors.New("failing after the splice on purpose")
		}},
	}}}}
}

type spliceEnv struct {
	srv  *Server
	addr string
	data []byte
}

func newSpliceEnv(t *testing.T, size int) *spliceEnv {
	t.Helper()
	data := make([]byte, size)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	path := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	// SPLICE_FAIL logs an error per call, on purpose.
	log := zaptest.NewLogger(t, zaptest.Level(zap.DPanicLevel))
	srv := NewServer(log, NewDispatcher(log, nil, spliceProgram(t, f)), ServerConfig{SpliceReads: true})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.ServeTCP(l)
	return &spliceEnv{srv: srv, addr: l.Addr().String(), data: data}
}

func (e *spliceEnv) shutdown(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.srv.Shutdown(ctx); err != nil {
		t.Errorf("shutdown: %v", err)
	}
}

func spliceArgs(off uint64, count, tail uint32) []byte {
	b := xdr.AppendUint64(nil, off)
	b = xdr.AppendUint32(b, count)
	return xdr.AppendUint32(b, tail)
}

// checkSplice checks one SPLICE result against the file.
func (e *spliceEnv) checkSplice(res []byte, off uint64, count, tail uint32) error {
	want := e.data[min(off, uint64(len(e.data))):min(off+uint64(count), uint64(len(e.data)))]
	rd := xdr.NewReader(res)
	n := rd.Uint32()
	if rd.Err() != nil {
		return rd.Err()
	}
	if int(n) > len(want) || (n == 0 && len(want) > 0) {
		return fmt.Errorf("off %d count %d: spliced %d bytes, file has %d there", off, count, n, len(want))
	}
	got := rd.FixedOpaque(int(n))
	if !bytes.Equal(got, want[:n]) {
		return fmt.Errorf("off %d count %d: data differs from the file", off, count)
	}
	if tail != 0 && rd.Uint32() != tail {
		return fmt.Errorf("off %d count %d: tail word lost", off, count)
	}
	if rd.Err() != nil || rd.Len() != 0 {
		return fmt.Errorf("off %d count %d: reply framing wrong (err %v, %d bytes left)", off, count, rd.Err(), rd.Len())
	}
	return nil
}

// TestSpliceMixedReplies sends spliced replies of every alignment and
// size, with tails, next to copied replies and failing splices, many in
// flight, and checks every byte: the writer's MSG_MORE / splice / writev
// sequence must keep records intact and in their own framing.
func TestSpliceMixedReplies(t *testing.T) {
	env := newSpliceEnv(t, 3<<20+5)
	defer env.shutdown(t)
	c := dialT(t, env.addr)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for i := 0; i < 40; i++ {
				off := uint64(rng.IntN(len(env.data) + 4096))
				count := uint32(1 + rng.IntN(1<<20))
				var tail uint32
				if rng.IntN(2) == 0 {
					tail = 0xdecaf000 + uint32(i)
				}
				var err error
				switch rng.IntN(4) {
				case 0:
					args := []byte(fmt.Sprintf("echo %d %d", w, i))
					args = xdr.AppendPad(args, len(args))
					var res []byte
					res, err = c.Call(ctx, &ClientCall{Prog: 400001, Vers: 1, Proc: 2, Args: args})
					if err == nil && !bytes.Equal(res, args) {
						err = fmt.Errorf("echo came back as %q", res)
					}
				case 1:
					_, err = c.Call(ctx, &ClientCall{Prog: 400001, Vers: 1, Proc: 3, Args: spliceArgs(off, count, tail)})
					var ae *AcceptError
					if errors.As(err, &ae) && ae.Stat == SystemErr {
						err = nil
					} else {
						err = fmt.Errorf("SPLICE_FAIL: want SYSTEM_ERR, got %v", err)
					}
				default:
					var res []byte
					res, err = c.Call(ctx, &ClientCall{Prog: 400001, Vers: 1, Proc: 1, Args: spliceArgs(off, count, tail)})
					if err == nil {
						err = env.checkSplice(res, off, count, tail)
					}
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// openFDs counts this process's open descriptors.
func openFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// TestSpliceClientVanishes: a client that asks for many 1 MiB spliced
// replies and closes its socket without reading them must cost the server
// nothing lasting: no hang, and after shutdown no pipe left open.
func TestSpliceClientVanishes(t *testing.T) {
	before := openFDs(t)
	env := newSpliceEnv(t, 2<<20)
	for round := 0; round < 3; round++ {
		conn, err := net.Dial("tcp", env.addr)
		if err != nil {
			t.Fatal(err)
		}
		var batch []byte
		for i := 0; i < 32; i++ {
			h := CallHeader{XID: uint32(i + 1), Prog: 400001, Vers: 1, Proc: 1}
			msg := AppendCallHeader(nil, &h)
			msg = append(msg, spliceArgs(uint64(i*4096), 1<<20, 0)...)
			batch = AppendRecordMark(batch, len(msg))
			batch = append(batch, msg...)
		}
		if _, err := conn.Write(batch); err != nil {
			t.Fatal(err)
		}
		// Read a little of the first reply so the server is mid-transfer.
		if _, err := conn.Read(make([]byte, 1000)); err != nil {
			t.Fatal(err)
		}
		conn.(*net.TCPConn).SetLinger(0) // reset, as a crashed client
		conn.Close()
	}
	// The server still answers others.
	c := dialT(t, env.addr)
	res, err := c.Call(context.Background(), &ClientCall{Prog: 400001, Vers: 1, Proc: 1, Args: spliceArgs(12345, 1<<20, 0)})
	if err != nil {
		t.Fatal(err)
	}
	if err := env.checkSplice(res, 12345, 1<<20, 0); err != nil {
		t.Fatal(err)
	}
	c.Close()
	env.shutdown(t)
	// Connections wind down after Shutdown returns only if it timed out;
	// give the runtime a moment to close the sockets it owns.
	deadline := time.Now().Add(5 * time.Second)
	for openFDs(t) > before+1 && time.Now().Before(deadline) { // +1: the data file
		time.Sleep(10 * time.Millisecond)
	}
	if n := openFDs(t); n > before+1 {
		t.Errorf("%d descriptors open after shutdown, %d before the server (pipes leaked?)", n, before)
	}
}
