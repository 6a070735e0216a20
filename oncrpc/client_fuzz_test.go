package oncrpc

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// fuzzXID is the XID of the one call FuzzClientReplyStream makes; its
// seeds answer it.
const fuzzXID = 0x01020304

// FuzzClientReplyStream feeds arbitrary bytes to a TCP Client as the
// server's side of the stream while one call (with or without a lent
// ReplyBuf) waits: bad record marks, fragments that claim more than
// arrives, replies for unknown XIDs, truncated headers. The call must end
// (with results or an error), the lent buffer must only be written while
// the reader owns it, and Close must return.
func FuzzClientReplyStream(f *testing.F) {
	reply := func(xid uint32, body ...byte) []byte {
		msg := binary.BigEndian.AppendUint32(nil, xid)
		msg = append(msg, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0) // REPLY, MSG_ACCEPTED, AUTH_NONE, SUCCESS
		msg = append(msg, body...)
		return append(AppendRecordMark(nil, len(msg)), msg...)
	}
	f.Add(reply(fuzzXID, 0, 0, 0, 5), true)
	f.Add(reply(fuzzXID, 0, 0, 0, 5), false)
	f.Add(append(reply(7), reply(fuzzXID, 1, 2, 3, 4)...), true)
	two := reply(fuzzXID, 9, 9, 9, 9)
	frag := append([]byte{0, 0, 0, 10}, two[4:14]...) // first fragment, not last
	frag = append(frag, AppendRecordMark(nil, len(two)-14)...)
	f.Add(append(frag, two[14:]...), true)
	f.Add([]byte{0x80, 0, 0, 2, 1, 2}, true)                      // too short for an XID
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4}, true)       // claims 2 GiB
	f.Add([]byte{0x80, 0x10, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8}, true) // claims 1 MiB, sends 8
	f.Add([]byte{0x00, 0x00, 0x00, 0x00, 0x80, 0, 0, 4, 1, 2, 3, 4}, false)
	f.Fuzz(func(t *testing.T, stream []byte, lend bool) {
		cs, ss := net.Pipe()
		c := NewClient(cs)
		c.nextXID.Store(fuzzXID - 1)
		go io.Copy(io.Discard, ss) // the call's bytes
		go func() {
			ss.Write(stream)
			ss.Close()
		}()
		var buf []byte
		if lend {
			buf = make([]byte, 64)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		done := make(chan struct{})
		go func() {
			defer close(done)
			c.Call(ctx, &ClientCall{Prog: 1, Vers: 1, Proc: 1, ReplyBuf: buf})
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("call did not end after the stream closed")
		}
		c.Close()
	})
}

// FuzzClientSinkStream is FuzzClientReplyStream for a call with a
// ReplySink (the results' first word giving the data's length): whatever
// the stream says, the call ends, and the file is never written outside
// [Off, Off+ReplyPayloadMax).
func FuzzClientSinkStream(f *testing.F) {
	reply := func(xid uint32, body ...byte) []byte {
		msg := binary.BigEndian.AppendUint32(nil, xid)
		msg = append(msg, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
		msg = append(msg, body...)
		return append(AppendRecordMark(nil, len(msg)), msg...)
	}
	f.Add(reply(fuzzXID, 0, 0, 0, 5, 1, 2, 3, 4, 5, 0, 0, 0), uint16(64))
	f.Add(reply(fuzzXID, 0, 0, 0, 5, 1, 2, 3, 4, 5, 0, 0, 0), uint16(4))     // more than max
	f.Add(reply(fuzzXID, 0, 0, 0x10, 0, 1, 2, 3, 4, 5, 0, 0, 0), uint16(64)) // more than the record
	f.Add(append(reply(7), reply(fuzzXID, 0, 0, 0, 1, 9, 0, 0, 0)...), uint16(8))
	f.Add([]byte{0x80, 0x10, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8}, uint16(100))
	f.Fuzz(func(t *testing.T, stream []byte, max uint16) {
		cs, ss := net.Pipe()
		c := NewClient(cs)
		c.nextXID.Store(fuzzXID - 1)
		go io.Copy(io.Discard, ss)
		go func() {
			ss.Write(stream)
			ss.Close()
		}()
		file, err := os.CreateTemp(t.TempDir(), "sink")
		if err != nil {
			t.Fatal(err)
		}
		defer file.Close()
		const off = 3
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		done := make(chan struct{})
		sink := &ReplySink{File: file, Off: off, Locate: lengthLocate}
		go func() {
			defer close(done)
			c.Call(ctx, &ClientCall{Prog: 1, Vers: 1, Proc: 1, ReplyPayloadMax: int(max), Sink: sink})
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("call did not end after the stream closed")
		}
		c.Close()
		fi, err := file.Stat()
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() > off+int64(max) {
			t.Fatalf("file is %d bytes, beyond Off+max = %d", fi.Size(), off+int(max))
		}
		if n, ok := sink.Placed(); ok && (n > int(max) || int64(n) > fi.Size()) {
			t.Fatalf("placed %d bytes (max %d, file %d)", n, max, fi.Size())
		}
	})
}
