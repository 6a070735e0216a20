package oncrpc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"
	"unsafe"
)

// aliases reports whether b lies in the backing array of buf.
func aliases(buf, b []byte) bool {
	if cap(buf) == 0 || len(b) == 0 {
		return false
	}
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return p >= lo && p+uintptr(len(b)) <= lo+uintptr(cap(buf))
}

func TestClientReplyBuf(t *testing.T) {
	env := newTestEnv(t, ServerConfig{})
	c := dialT(t, env.addr)
	ctx := context.Background()
	want := append(words(5), 'h', 'e', 'l', 'l', 'o', 0, 0, 0, 0, 0, 0, 9)
	buf := make([]byte, 4096)
	for range 3 {
		res, err := c.Call(ctx, &ClientCall{Prog: 400000, Vers: 2, Proc: 5, ReplyBuf: buf})
		if err != nil || !bytes.Equal(res, want) {
			t.Fatalf("payload reply % x, %v", res, err)
		}
		if !aliases(buf, res) {
			t.Fatal("results do not alias the lent ReplyBuf")
		}
	}
	// Too small: the reply is allocated.
	small := make([]byte, 8)
	res, err := c.Call(ctx, &ClientCall{Prog: 400000, Vers: 2, Proc: 5, ReplyBuf: small})
	if err != nil || !bytes.Equal(res, want) || aliases(small, res) {
		t.Fatalf("small ReplyBuf: % x, %v, aliased %v", res, err, aliases(small, res))
	}
	if !bytes.Equal(small, make([]byte, 8)) {
		t.Fatalf("a ReplyBuf too small was written: % x", small)
	}
}

// TestClientPayloadWritev sends head, payload and tail without flattening
// them; the echo procedure returns the arguments as the server saw them.
func TestClientPayloadWritev(t *testing.T) {
	env := newTestEnv(t, ServerConfig{})
	c := dialT(t, env.addr)
	ctx := context.Background()
	for _, n := range []int{0, 1, 5, 8, 300<<10 + 3} {
		args := words(1, 2, uint32(n))
		payload := bytes.Repeat([]byte{0xa5}, n)
		tail := words(7)
		want := append(append(append(bytes.Clone(args), payload...), make([]byte, (4-n%4)%4)...), tail...)
		for _, lend := range []bool{false, true} {
			cc := &ClientCall{Prog: 400000, Vers: 2, Proc: 1, Args: args, Payload: payload, Tail: tail}
			if lend {
				cc.ReplyBuf = make([]byte, 0, len(want)+64)
			}
			res, err := c.Call(ctx, cc)
			if err != nil || !bytes.Equal(res, want) {
				t.Fatalf("echo of a %d-byte payload: %d bytes, %v", n, len(res), err)
			}
			if lend != aliases(cc.ReplyBuf, res) {
				t.Fatalf("%d-byte payload, lent %v: aliased %v", n, lend, !lend)
			}
		}
	}
}

// TestClientConcurrentLentBuffers runs calls with lent buffers from several
// goroutines, some cancelled at random points; each goroutine scribbles
// over its buffer after every call.
func TestClientConcurrentLentBuffers(t *testing.T) {
	env := newTestEnv(t, ServerConfig{})
	c := dialT(t, env.addr)
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			payload := bytes.Repeat([]byte{byte(g)}, 100<<10+g)
			buf := make([]byte, 0, 101<<10+g+256)
			for i := range 40 {
				ctx, cancel := context.WithCancel(context.Background())
				if i%3 == 1 {
					time.AfterFunc(time.Duration(i*7%50)*time.Microsecond, cancel)
				}
				args := words(uint32(g), uint32(i), uint32(len(payload)))
				res, err := c.Call(ctx, &ClientCall{Prog: 400000, Vers: 2, Proc: 1, Args: args, Payload: payload, ReplyBuf: buf})
				cancel()
				switch {
				case err == nil:
					if !bytes.Equal(res[:12], args) || !bytes.Equal(res[12:12+len(payload)], payload) {
						t.Errorf("goroutine %d call %d: wrong echo", g, i)
						return
					}
				case !errors.Is(err, context.Canceled):
					t.Errorf("goroutine %d call %d: %v", g, i, err)
					return
				}
				scribble(buf)
			}
		}()
	}
	wg.Wait()
	if _, err := c.Call(context.Background(), &ClientCall{Prog: 400000, Vers: 2, Proc: 0}); err != nil {
		t.Fatalf("after the cancellations: %v", err)
	}
}

// scribble writes 0xff over all of buf's capacity, so that the race
// detector sees any write the reader would still make into it.
func scribble(buf []byte) {
	full := buf[:cap(buf)]
	for j := range full {
		full[j] = 0xff
	}
}

// TestClientCancelDuringSlowReplies cancels calls at random moments while
// a server trickles replies out, so that many are abandoned half read into
// their lent buffers; the others still get their own replies.
func TestClientCancelDuringSlowReplies(t *testing.T) {
	c, conns := fakeServer(t)
	const size = 32 << 10
	go func() {
		s := <-conns
		xids := make(chan uint32, 64)
		go func() {
			defer close(xids)
			r := bufio.NewReader(s)
			for {
				rec, err := ReadRecord(r, nil, 1<<20)
				if err != nil {
					return
				}
				xids <- binary.BigEndian.Uint32(rec)
			}
		}()
		for xid := range xids {
			res := bytes.Repeat(binary.BigEndian.AppendUint32(nil, xid), size/4)
			rec := fragments(successReply(xid, res), 5000)
			for len(rec) > 0 {
				n := min(len(rec), 4096)
				if _, err := s.Write(rec[:n]); err != nil {
					return
				}
				rec = rec[n:]
				time.Sleep(50 * time.Microsecond)
			}
		}
	}()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 0, size+100)
			for i := range 25 {
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration((g*31+i*17)%40)*100*time.Microsecond)
				res, err := c.Call(ctx, &ClientCall{Prog: 1, Vers: 1, Proc: 1, ReplyBuf: buf})
				cancel()
				if err == nil {
					if len(res) != size || !bytes.Equal(res[:4], res[size-4:]) {
						t.Errorf("goroutine %d call %d: a wrong or torn reply", g, i)
						return
					}
				} else if !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("goroutine %d call %d: %v", g, i, err)
					return
				}
				scribble(buf)
			}
		}()
	}
	wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if res, err := c.Call(ctx, &ClientCall{Prog: 1, Vers: 1, Proc: 1}); err != nil || len(res) != size {
		t.Fatalf("after the cancellations: %d bytes, %v", len(res), err)
	}
}

func TestClientUDPPayload(t *testing.T) {
	c := dialUDP(t, newTestEnv(t, ServerConfig{}))
	buf := make([]byte, 0, 1024)
	res, err := c.Call(context.Background(), &ClientCall{Prog: 400000, Vers: 2, Proc: 1,
		Args: words(3), Payload: []byte("abc"), Tail: words(4), ReplyBuf: buf})
	if want := append(words(3), 'a', 'b', 'c', 0, 0, 0, 0, 4); err != nil || !bytes.Equal(res, want) {
		t.Fatalf("udp echo: % x %v", res, err)
	}
	if aliases(buf, res) {
		t.Fatal("UDP used the lent buffer")
	}
}

// fakeServer accepts one connection and hands it to the test.
func fakeServer(t *testing.T) (*Client, chan net.Conn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	conns := make(chan net.Conn, 1)
	go func() {
		s, err := l.Accept()
		if err != nil {
			return
		}
		t.Cleanup(func() { s.Close() })
		conns <- s
	}()
	return dialT(t, l.Addr().String()), conns
}

// readCall reads one call record and returns its XID.
func readCall(t *testing.T, r io.Reader) uint32 {
	t.Helper()
	rec, err := ReadRecord(r, nil, 4<<20)
	if err != nil || len(rec) < 4 {
		t.Errorf("server: reading a call: %v", err)
		return 0
	}
	return binary.BigEndian.Uint32(rec)
}

// successReply is an accepted SUCCESS reply to xid with results res.
func successReply(xid uint32, res []byte) []byte {
	return append(words(xid, 1, 0, 0, 0, 0), res...)
}

// fragments marks msg as records fragments cut at the given offsets.
func fragments(msg []byte, cuts ...int) []byte {
	var out []byte
	prev := 0
	for i, cut := range append(cuts, len(msg)) {
		w := uint32(cut - prev)
		if i == len(cuts) {
			w |= lastFragment
		}
		out = binary.BigEndian.AppendUint32(out, w)
		out = append(out, msg[prev:cut]...)
		prev = cut
	}
	return out
}

func TestClientMultiFragmentReply(t *testing.T) {
	c, conns := fakeServer(t)
	results := bytes.Repeat([]byte("0123456789abcdef"), 1000)
	cases := []struct {
		name   string
		cuts   []int
		bufCap int
		alias  bool
	}{
		{"xid split across fragments", []int{0, 3, 100}, 1 << 20, false},
		{"lent buffer holds it", []int{10, 5000, 5000}, 1 << 20, true},
		{"lent buffer too small for the whole", []int{10, 5000}, 6000, false},
		{"no lent buffer", []int{10, 5000}, 0, false},
		{"single fragment, lent", nil, 1 << 20, true},
	}
	go func() {
		s := <-conns
		for _, tc := range cases {
			xid := readCall(t, s)
			if _, err := s.Write(fragments(successReply(xid, results), tc.cuts...)); err != nil {
				t.Errorf("server: %v", err)
				return
			}
		}
	}()
	for _, tc := range cases {
		var buf []byte
		if tc.bufCap > 0 {
			buf = make([]byte, 0, tc.bufCap)
		}
		res, err := c.Call(context.Background(), &ClientCall{Prog: 1, Vers: 1, Proc: 1, ReplyBuf: buf})
		if err != nil || !bytes.Equal(res, results) {
			t.Fatalf("%s: %d bytes, %v", tc.name, len(res), err)
		}
		if aliases(buf, res) != tc.alias {
			t.Errorf("%s: aliased %v, want %v", tc.name, !tc.alias, tc.alias)
		}
	}
}

// waitClaimed waits until the reader reads into the lent buffer of xid.
func waitClaimed(t *testing.T, c *Client, xid uint32) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		c.mu.Lock()
		p := c.pending[xid]
		claimed := p != nil && p.claimed
		c.mu.Unlock()
		if claimed {
			return
		}
	}
	t.Fatal("the reader never claimed the lent buffer")
}

// stalledServer answers the first call on s with the record rec(xid),
// sending the XID on xids and stalling once it has written cut bytes of
// it, until resume is closed; it answers the next call with the results
// words(42). done is closed when it has finished.
func stalledServer(t *testing.T, s net.Conn, rec func(xid uint32) []byte, cut int) (xids <-chan uint32, resume chan<- struct{}, done <-chan struct{}) {
	xidc := make(chan uint32, 1)
	resumec := make(chan struct{})
	donec := make(chan struct{})
	go func() {
		defer close(donec)
		xid := readCall(t, s)
		r := rec(xid)
		if _, err := s.Write(r[:cut]); err != nil {
			t.Errorf("server: %v", err)
			return
		}
		xidc <- xid
		<-resumec
		if _, err := s.Write(r[cut:]); err != nil {
			t.Errorf("server: %v", err)
			return
		}
		// The next call is answered normally.
		xid = readCall(t, s)
		s.Write(fragments(successReply(xid, words(42))))
	}()
	return xidc, resumec, donec
}

// goCall makes the call cc on c in a goroutine; its error comes on the
// channel returned.
func goCall(ctx context.Context, c *Client, cc *ClientCall) <-chan error {
	errc := make(chan error, 1)
	go func() {
		_, err := c.Call(ctx, cc)
		errc <- err
	}()
	return errc
}

// cancelOnceClaimed waits until the reader reads the reply of xid into
// the call's lent buffer or sink, cancels the call and fails unless it
// returns context.Canceled (on errc) at once, without waiting for the
// rest of its stalled reply.
func cancelOnceClaimed(t *testing.T, c *Client, xid uint32, cancel context.CancelFunc, errc <-chan error) {
	t.Helper()
	waitClaimed(t, c, xid)
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled call: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a cancelled call waited for its stalled reply")
	}
}

// TestClientCancelWhileReadingIntoReplyBuf cancels a call whose reply is
// half read into its lent buffer: Call returns without waiting for the
// rest, the buffer is not written afterwards (the race detector checks
// too), and the connection keeps working.
func TestClientCancelWhileReadingIntoReplyBuf(t *testing.T) {
	c, conns := fakeServer(t)
	const size = 200 << 10
	// Mark, XID and a little data of the first of two fragments; then
	// stall.
	xids, resume, serverDone := stalledServer(t, <-conns, func(xid uint32) []byte {
		return fragments(successReply(xid, bytes.Repeat([]byte{0xee}, size)), 1000)
	}, 200)
	buf := make([]byte, size+1024)
	ctx, cancel := context.WithCancel(context.Background())
	errc := goCall(ctx, c, &ClientCall{Prog: 1, Vers: 1, Proc: 1, ReplyBuf: buf})
	cancelOnceClaimed(t, c, <-xids, cancel, errc)
	// The buffer is ours again: write it while the reader takes in the rest
	// of the abandoned reply.
	for i := range buf {
		buf[i] = 0x11
	}
	close(resume)
	res, err := c.Call(context.Background(), &ClientCall{Prog: 1, Vers: 1, Proc: 1, ReplyBuf: make([]byte, 0, 100)})
	if err != nil || !bytes.Equal(res, words(42)) {
		t.Fatalf("call after the abandoned one: % x %v", res, err)
	}
	<-serverDone
	if i := bytes.IndexFunc(buf, func(r rune) bool { return r != 0x11 }); i >= 0 {
		t.Fatalf("the abandoned buffer was written at %d", i)
	}
}

// TestClientCancelBeforeReply: a reply arriving after its call gave up is
// dropped and does not touch the buffer the call lent.
func TestClientCancelBeforeReply(t *testing.T) {
	c, conns := fakeServer(t)
	xids := make(chan uint32, 1)
	resume := make(chan struct{})
	go func() {
		s := <-conns
		xid := readCall(t, s)
		xids <- xid
		<-resume
		s.Write(fragments(successReply(xid, bytes.Repeat([]byte{0xee}, 5000))))
		xid = readCall(t, s)
		s.Write(fragments(successReply(xid, words(43))))
	}()
	buf := make([]byte, 0, 8192)
	ctx, cancel := context.WithCancel(context.Background())
	errc := goCall(ctx, c, &ClientCall{Prog: 1, Vers: 1, Proc: 1, ReplyBuf: buf})
	<-xids
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v", err)
	}
	close(resume)
	res, err := c.Call(context.Background(), &ClientCall{Prog: 1, Vers: 1, Proc: 1})
	if err != nil || !bytes.Equal(res, words(43)) {
		t.Fatalf("next call: % x %v", res, err)
	}
	if !bytes.Equal(buf[:cap(buf)], make([]byte, cap(buf))) {
		t.Fatal("a late reply was written into the abandoned buffer")
	}
}

func TestClientReadRecordDoesNotAllocateClaimedSize(t *testing.T) {
	// A claimed 32 MiB fragment followed by 8 bytes and EOF.
	raw := binary.BigEndian.AppendUint32(nil, 32<<20|lastFragment)
	raw = append(raw, 1, 2, 3, 4, 5, 6, 7, 8)
	for _, lent := range [][]byte{nil, make([]byte, 0, 100)} {
		c := &Client{br: bufio.NewReaderSize(bytes.NewReader(raw), clientReadBuffer)}
		var st recordState
		buf, err := c.readRecord(lent, &st)
		if err != io.ErrUnexpectedEOF {
			t.Fatalf("err %v", err)
		}
		if cap(buf) > 2*growStep {
			t.Fatalf("allocated %d bytes for 8 received", cap(buf))
		}
	}
	// The last fragment's buffer does not outgrow the record.
	raw = fragments(make([]byte, 1<<20+200))
	c := &Client{br: bufio.NewReaderSize(bytes.NewReader(raw), clientReadBuffer)}
	buf, err := c.readRecord(nil, new(recordState))
	if err != nil || len(buf) != 1<<20+200 || cap(buf) != len(buf) {
		t.Fatalf("1 MiB record: len %d cap %d, %v", len(buf), cap(buf), err)
	}
}

func TestClientRecordTooLarge(t *testing.T) {
	c, conns := fakeServer(t)
	go func() {
		s := <-conns
		xid := readCall(t, s)
		// Claim 100 MiB and send only the XID: refused before the data.
		s.Write(words(100<<20|lastFragment, xid))
	}()
	_, err := c.Call(context.Background(), &ClientCall{Prog: 1, Vers: 1, Proc: 1})
	var tl *RecordTooLargeError
	if !errors.As(err, &tl) || tl.Limit != maxReplyRecord {
		t.Fatalf("100 MiB reply: got %v", err)
	}
}

// replyServer answers every call on its connection with a SUCCESS reply
// carrying n bytes of results, as fast as it can.
func replyServer(b *testing.B, n int) *Client {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	go func() {
		s, err := l.Accept()
		if err != nil {
			return
		}
		defer s.Close()
		reply := fragments(successReply(0, make([]byte, n)))
		r := bufio.NewReader(s)
		var rec []byte
		for {
			if rec, err = ReadRecord(r, rec, 4<<20); err != nil {
				return
			}
			copy(reply[4:8], rec[:4])
			if _, err := s.Write(reply); err != nil {
				return
			}
		}
	}()
	c, err := Dial(context.Background(), "tcp", l.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}

func benchmarkClient(b *testing.B, reply, payload int, lend bool) {
	c := replyServer(b, reply)
	cc := ClientCall{Prog: 1, Vers: 1, Proc: 1, Args: words(1, 2, 3), Payload: make([]byte, payload)}
	if lend {
		cc.ReplyBuf = make([]byte, reply+1024)
	}
	ctx := context.Background()
	b.SetBytes(int64(reply + payload))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := c.Call(ctx, &cc); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkClientReply1MiB(b *testing.B)         { benchmarkClient(b, 1<<20, 0, false) }
func BenchmarkClientReply1MiBReplyBuf(b *testing.B) { benchmarkClient(b, 1<<20, 0, true) }
func BenchmarkClientReply4KiBReplyBuf(b *testing.B) { benchmarkClient(b, 4<<10, 0, true) }
func BenchmarkClientPayload1MiB(b *testing.B)       { benchmarkClient(b, 0, 1<<20, false) }
