package oncrpc

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The test results' layout: a length word, that many bytes of data, XDR
// padding, then anything (the "tail").
func lengthLocate(results []byte) (int, int, bool) {
	if len(results) < 4 {
		return 0, 0, false
	}
	n := binary.BigEndian.Uint32(results)
	if n == 0xffffffff {
		return 0, 0, false // "an error status"
	}
	return 4, int(n), true
}

// sinkResults is a reply's results in that layout.
func sinkResults(data, tail []byte) []byte {
	b := words(uint32(len(data)))
	b = append(b, data...)
	b = append(b, make([]byte, (4-len(data)%4)%4)...)
	return append(b, tail...)
}

// sinkFile is a file of size bytes of 0xaa in a temporary directory.
func sinkFile(t *testing.T, size int) *os.File {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(t.TempDir(), "sink"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if _, err := f.Write(bytes.Repeat([]byte{0xaa}, size)); err != nil {
		t.Fatal(err)
	}
	return f
}

// readOnlySinkFile is an empty sinkFile opened read-only: writing to it
// fails.
func readOnlySinkFile(t *testing.T) *os.File {
	t.Helper()
	ro, err := os.Open(sinkFile(t, 0).Name())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ro.Close() })
	return ro
}

// checkSinkFile fails unless f holds data at off and 0xaa everywhere
// else in its first size bytes, and is size bytes long.
func checkSinkFile(t *testing.T, f *os.File, size int, off int64, data []byte) {
	t.Helper()
	got, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	want := bytes.Repeat([]byte{0xaa}, size)
	copy(want[off:], data)
	if !bytes.Equal(got, want) {
		i := 0
		for i < min(len(got), len(want)) && got[i] == want[i] {
			i++
		}
		t.Fatalf("file: %d bytes, want %d; first difference at %d", len(got), len(want), i)
	}
}

// sinkTransports are the two ways the reader places data: splice(2)
// from a TCP socket, and copying from a connection that does not offer
// its socket ("copy").
var sinkTransports = []string{"tcp", "copy"}

// forEachSinkTransport runs test as a subtest on each of sinkTransports
// with a Client over it and the server's end.
func forEachSinkTransport(t *testing.T, test func(t *testing.T, transport string, c *Client, s net.Conn)) {
	for _, tr := range sinkTransports {
		t.Run(tr, func(t *testing.T) {
			c, s := sinkClient(t, tr)
			test(t, tr, c, s)
		})
	}
}

// sinkClient is a Client over transport and the server's end.
func sinkClient(t *testing.T, transport string) (*Client, net.Conn) {
	t.Helper()
	if transport == "tcp" {
		c, conns := fakeServer(t)
		select {
		case s := <-conns:
			return c, s
		case <-time.After(10 * time.Second):
			t.Fatal("no connection")
		}
	}
	// A TCP connection that does not offer its socket: the reader
	// copies.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	cs, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	ss, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	c := NewClient(plainConn{cs})
	t.Cleanup(func() { c.Close(); ss.Close() })
	return c, ss
}

// plainConn hides a connection's syscall.Conn.
type plainConn struct{ net.Conn }

// serveReplies answers each call on s with the next of replies (a
// function of the call's XID returning the bytes to write).
func serveReplies(t *testing.T, s net.Conn, replies ...func(xid uint32) []byte) chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, r := range replies {
			xid := readCall(t, s)
			if _, err := s.Write(r(xid)); err != nil {
				return
			}
		}
	}()
	return done
}

func single(results []byte) func(uint32) []byte {
	return func(xid uint32) []byte { return fragments(successReply(xid, results)) }
}

// TestClientSinkPlacesData: the data of a reply goes into the file at the
// sink's offset and nowhere else, from the first byte the reader had
// buffered to the last it spliced; the results come back without it.
func TestClientSinkPlacesData(t *testing.T) {
	const fileSize = 3 << 20
	sizes := []int{0, 1, 3, 4096, 64<<10 + 5, 1 << 20}
	forEachSinkTransport(t, func(t *testing.T, tr string, c *Client, s net.Conn) {
		var replies []func(uint32) []byte
		for i, n := range sizes {
			replies = append(replies, single(sinkResults(pattern(n, byte(i)), []byte("TAIL"))))
		}
		done := serveReplies(t, s, replies...)
		for i, n := range sizes {
			f := sinkFile(t, fileSize)
			data := pattern(n, byte(i))
			sink := &ReplySink{File: f, Off: 1001, Locate: lengthLocate}
			res, err := c.Call(context.Background(), &ClientCall{Prog: 1, Vers: 1, Proc: 1, ReplyPayloadMax: 1 << 20, Sink: sink})
			if err != nil {
				t.Fatalf("size %d: %v", n, err)
			}
			if got, ok := sink.Placed(); !ok || got != n {
				t.Fatalf("size %d: placed %d, %v", n, got, ok)
			}
			if want := append(words(uint32(n)), "TAIL"...); !bytes.Equal(res, want) {
				t.Fatalf("size %d: results % x, want % x", n, res, want)
			}
			checkSinkFile(t, f, fileSize, 1001, data)
		}
		<-done
		// The reader took the path the subtest is about.
		if spliced := c.spliced.Load() > 0; spliced != (tr == "tcp" && spliceSupported) {
			t.Fatalf("%s: the reader spliced: %v", tr, spliced)
		}
	})
}

// pattern is n bytes that differ from 0xaa and from each other's runs.
func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7+int(seed)) | 1
		if b[i] == 0xaa {
			b[i] = 0x55
		}
	}
	return b
}

// TestClientSinkHostileReplies: replies a server should not send. None
// writes the file; each comes back whole (for the caller's decoder to
// judge) or as an RPC error, and the connection goes on in step.
func TestClientSinkHostileReplies(t *testing.T) {
	const max = 100
	big := sinkResults(pattern(200, 1), nil) // more than max
	cases := []struct {
		name   string
		reply  func(xid uint32) []byte
		locate func([]byte) (int, int, bool)
		whole  []byte // the results Call returns, nil for an error
	}{
		{"data longer than the call allows", single(big), lengthLocate, big},
		{"data longer than the record", single(words(1000, 1, 2)), lengthLocate, words(1000, 1, 2)},
		{"padding past the record", single(append(words(3), 1, 2, 3)), lengthLocate, append(words(3), 1, 2, 3)},
		{"locate refuses (error status)", single(words(0xffffffff, 5)), lengthLocate, words(0xffffffff, 5)},
		{"locate says a negative offset", single(sinkResults([]byte{1}, nil)), func([]byte) (int, int, bool) { return -4, 1, true }, sinkResults([]byte{1}, nil)},
		{"locate says an offset past the head", single(sinkResults([]byte{1}, nil)), func(b []byte) (int, int, bool) { return len(b) + 1, 0, true }, sinkResults([]byte{1}, nil)},
		{"locate says a negative length", single(sinkResults([]byte{1}, nil)), func([]byte) (int, int, bool) { return 4, -1, true }, sinkResults([]byte{1}, nil)},
		{"results too short to locate", single(words()), lengthLocate, []byte{}},
		{"several fragments", func(xid uint32) []byte { return fragments(successReply(xid, sinkResults([]byte{1, 2}, nil)), 10) }, lengthLocate, sinkResults([]byte{1, 2}, nil)},
		{"not SUCCESS", func(xid uint32) []byte { return fragments(words(xid, 1, 0, 0, 0, uint32(ProgUnavail))) }, lengthLocate, nil},
		{"denied", func(xid uint32) []byte { return fragments(words(xid, 1, 1, 1, 1)) }, lengthLocate, nil},
		{"header cut short", func(xid uint32) []byte { return fragments(words(xid, 1, 0)) }, lengthLocate, nil},
	}
	forEachSinkTransport(t, func(t *testing.T, _ string, c *Client, s net.Conn) {
		var replies []func(uint32) []byte
		for _, tc := range cases {
			replies = append(replies, tc.reply, single(sinkResults([]byte("ok"), nil)))
		}
		done := serveReplies(t, s, replies...)
		for _, tc := range cases {
			f := sinkFile(t, 1000)
			sink := &ReplySink{File: f, Off: 10, Locate: tc.locate}
			res, err := c.Call(context.Background(), &ClientCall{Prog: 1, Vers: 1, Proc: 1, ReplyPayloadMax: max, Sink: sink})
			if tc.whole == nil {
				if err == nil {
					t.Fatalf("%s: results % x, want an error", tc.name, res)
				}
			} else if err != nil || !bytes.Equal(res, tc.whole) {
				t.Fatalf("%s: % x, %v; want % x", tc.name, res, err, tc.whole)
			}
			if n, ok := sink.Placed(); ok {
				t.Fatalf("%s: placed %d bytes", tc.name, n)
			}
			checkSinkFile(t, f, 1000, 10, nil)
			// In step: the next reply is placed.
			sink = &ReplySink{File: f, Off: 10, Locate: lengthLocate}
			if _, err := c.Call(context.Background(), &ClientCall{Prog: 1, Vers: 1, Proc: 1, ReplyPayloadMax: max, Sink: sink}); err != nil {
				t.Fatalf("%s: the next call: %v", tc.name, err)
			}
			checkSinkFile(t, f, 1000, 10, []byte("ok"))
		}
		<-done
	})
}

// TestClientSinkTruncatedReply: a server that dies inside the data fails
// the call as a lost connection, with nothing written outside the data's
// place.
func TestClientSinkTruncatedReply(t *testing.T) {
	forEachSinkTransport(t, func(t *testing.T, _ string, c *Client, s net.Conn) {
		data := pattern(300<<10, 3)
		go func() {
			xid := readCall(t, s)
			rec := fragments(successReply(xid, sinkResults(data, nil)))
			s.Write(rec[:200<<10])
			s.Close()
		}()
		f := sinkFile(t, 1<<20)
		sink := &ReplySink{File: f, Off: 5, Locate: lengthLocate}
		_, err := c.Call(context.Background(), &ClientCall{Prog: 1, Vers: 1, Proc: 1, ReplyPayloadMax: 1 << 20, Sink: sink})
		if err == nil || !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("call: %v, want a lost connection (unexpected EOF)", err)
		}
		got, _ := os.ReadFile(f.Name())
		if len(got) != 1<<20 {
			t.Fatalf("file is %d bytes", len(got))
		}
		for i, b := range got {
			if (i < 5 || i >= 5+len(data)) && b != 0xaa {
				t.Fatalf("byte %d outside the data's place written", i)
			}
			if i >= 5 && i < 5+len(data) && b != 0xaa && b != data[i-5] {
				t.Fatalf("byte %d is neither old nor the data", i)
			}
		}
	})
}

// TestClientSinkWriteError: a file that cannot be written fails the call
// with a *SinkWriteError; the rest of the reply is read and dropped, so
// the next call on the connection works.
func TestClientSinkWriteError(t *testing.T) {
	forEachSinkTransport(t, func(t *testing.T, _ string, c *Client, s net.Conn) {
		data := pattern(700<<10, 9)
		done := serveReplies(t, s, single(sinkResults(data, []byte("TAIL"))), single(words(42)))
		sink := &ReplySink{File: readOnlySinkFile(t), Locate: lengthLocate}
		_, err := c.Call(context.Background(), &ClientCall{Prog: 1, Vers: 1, Proc: 1, ReplyPayloadMax: 1 << 20, Sink: sink})
		var swe *SinkWriteError
		if !errors.As(err, &swe) {
			t.Fatalf("call: %v, want a *SinkWriteError", err)
		}
		res, err := c.Call(context.Background(), &ClientCall{Prog: 1, Vers: 1, Proc: 1})
		if err != nil || !bytes.Equal(res, words(42)) {
			t.Fatalf("the next call: % x, %v", res, err)
		}
		<-done
	})
}

// TestClientSinkCancel cancels a call whose data is half placed: Call
// returns at once, the file is not written after it returned, and the
// connection goes on with the next reply.
func TestClientSinkCancel(t *testing.T) {
	forEachSinkTransport(t, func(t *testing.T, _ string, c *Client, s net.Conn) {
		data := pattern(1<<20, 4)
		xids, resume, serverDone := stalledServer(t, s, func(xid uint32) []byte {
			return fragments(successReply(xid, sinkResults(data, nil)))
		}, 300<<10)
		f := sinkFile(t, 2<<20)
		ctx, cancel := context.WithCancel(context.Background())
		sink := &ReplySink{File: f, Locate: lengthLocate}
		errc := goCall(ctx, c, &ClientCall{Prog: 1, Vers: 1, Proc: 1, ReplyPayloadMax: 1 << 20, Sink: sink})
		cancelOnceClaimed(t, c, <-xids, cancel, errc)
		before, err := os.ReadFile(f.Name())
		if err != nil {
			t.Fatal(err)
		}
		close(resume)
		res, err := c.Call(context.Background(), &ClientCall{Prog: 1, Vers: 1, Proc: 1})
		if err != nil || !bytes.Equal(res, words(42)) {
			t.Fatalf("call after the abandoned one: % x %v", res, err)
		}
		<-serverDone
		after, err := os.ReadFile(f.Name())
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(before, after) {
			t.Fatal("the file was written after the cancelled call returned")
		}
	})
}

// TestClientSinkIgnoredOnUDP: a datagram transport returns the data in
// the results and says it placed nothing.
func TestClientSinkIgnoredOnUDP(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	go func() {
		buf := make([]byte, 65536)
		n, addr, err := pc.ReadFrom(buf)
		if err != nil || n < 4 {
			return
		}
		pc.WriteTo(successReply(binary.BigEndian.Uint32(buf), sinkResults([]byte("abc"), nil)), addr)
	}()
	c, err := Dial(context.Background(), "udp", pc.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	f := sinkFile(t, 10)
	sink := &ReplySink{File: f, Locate: lengthLocate}
	res, err := c.Call(context.Background(), &ClientCall{Prog: 1, Vers: 1, Proc: 1, ReplyPayloadMax: 100, Sink: sink})
	if err != nil || !bytes.Equal(res, sinkResults([]byte("abc"), nil)) {
		t.Fatalf("% x, %v", res, err)
	}
	if _, ok := sink.Placed(); ok {
		t.Fatal("UDP placed the data")
	}
	checkSinkFile(t, f, 10, 0, nil)
}

// TestReplySinkPlace: what a transport that holds the data apart from the
// results (RPC-over-RDMA) gets from Place. Data is written only when
// Locate puts exactly len(data) bytes right at the end of the results;
// anything else leaves the file alone and Placed false, and a Place
// forgets what the one before it placed.
func TestReplySinkPlace(t *testing.T) {
	data := []byte("seventeen bytes!!")
	head := words(uint32(len(data)))
	for _, c := range []struct {
		name          string
		results, data []byte
		locate        func([]byte) (int, int, bool)
		want          bool
	}{
		{"placed", head, data, lengthLocate, true},
		{"no data", head, nil, lengthLocate, false},
		{"an error status", words(0xffffffff), data, lengthLocate, false},
		{"a longer length word", words(uint32(len(data) + 1)), data, lengthLocate, false},
		{"a shorter length word", words(uint32(len(data) - 1)), data, lengthLocate, false},
		{"results after the length word", append(words(uint32(len(data))), 0, 0, 0, 0), data, lengthLocate, false},
		{"no Locate", head, data, nil, false},
	} {
		f := sinkFile(t, 64)
		s := &ReplySink{File: f, Off: 8, Locate: c.locate}
		s.placed, s.isPlace = 99, true // a reply before this one
		placed, err := s.Place(c.results, c.data)
		if err != nil || placed != c.want {
			t.Fatalf("%s: Place = %v, %v; want %v", c.name, placed, err, c.want)
		}
		n, ok := s.Placed()
		if ok != c.want || (ok && n != len(data)) || (!ok && n != 0) {
			t.Fatalf("%s: Placed = %d, %v", c.name, n, ok)
		}
		if c.want {
			checkSinkFile(t, f, 64, 8, data)
		} else {
			checkSinkFile(t, f, 64, 0, nil)
		}
	}

	// a file that cannot be written: a *SinkWriteError, nothing placed
	s := &ReplySink{File: readOnlySinkFile(t), Locate: lengthLocate}
	placed, err := s.Place(head, data)
	var swe *SinkWriteError
	if placed || !errors.As(err, &swe) {
		t.Fatalf("Place into a read-only file: %v, %v", placed, err)
	}
	if _, ok := s.Placed(); ok {
		t.Fatal("Placed after a failed write")
	}
}
