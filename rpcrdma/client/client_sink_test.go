package client

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/rpcrdma/proto"
	"github.com/gonfsrdma/gonfsrdma/verbs"
	"github.com/gonfsrdma/gonfsrdma/verbs/softfabric"
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// TestReplyWriteChunkChecked: a reply's Write chunk is data only the call
// asked for. The data of a correct reply to a call with a ReplySink goes
// into the sink's file (and is left out of the results); a server that
// names a Write chunk the call did not offer, claims more bytes than the
// call offered, or returns two chunks gets a protocol error, and no sink
// file is written.
func TestReplyWriteChunkChecked(t *testing.T) {
	fab := softfabric.NewFabric()
	fab.DisableWindows()
	addr := "evil-sink:20049"
	srvCh := startEvil(t, fab, addr, false)
	ctx := ctxT(t)
	c, err := Dial(ctx, fab, addr, Config{Credits: 1})
	if err != nil {
		t.Fatal(err)
	}
	srv := <-srvCh
	if srv == nil {
		t.Fatal("server side did not come up")
	}
	defer func() {
		c.Close()
		srv.close()
	}()
	f, err := os.OpenFile(filepath.Join(t.TempDir(), "sink"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const fileSize = 2 * evilPayload
	blank := bytes.Repeat([]byte{0xaa}, fileSize)
	if _, err := f.WriteAt(blank, 0); err != nil {
		t.Fatal(err)
	}
	locate := func(results []byte) (int, int, bool) {
		if len(results) < 4 {
			return 0, 0, false
		}
		return 4, int(binary.BigEndian.Uint32(results)), true
	}
	data := make([]byte, evilPayload)
	pattern(11, data)

	// serve answers one call: claimed is the Write chunk's length in the
	// reply (0: no Write list), chunks how many chunks the reply names.
	serve := func(claimed, chunks int) {
		h := srv.nextCall()
		var write proto.Chunk
		if claimed > 0 {
			handle, off := uint32(0x1234), uint64(0)
			if len(h.WriteList) == 1 {
				seg := h.WriteList[0][0]
				copy(srv.mr.Slice(evilDataOff, evilPayload), data)
				if st := srv.rdma(verbs.OpRDMAWrite, seg, min(claimed, int(seg.Length))); st != verbs.WCSuccess {
					t.Fatalf("RDMA Write into the offered chunk: %v", st)
				}
				handle, off = seg.Handle, seg.Offset
			}
			write = proto.Chunk{{Handle: handle, Length: uint32(claimed), Offset: off}}
		}
		h2 := proto.Header{XID: h.XID, Credits: 1, Proc: proto.ProcMsg}
		for range chunks {
			h2.WriteList = append(h2.WriteList, write)
		}
		b := h2.Append(srv.mr.Bytes()[evilSendOff:evilSendOff:evilMRSize])
		b = oncrpc.AppendAcceptedHeader(b, h.XID, oncrpc.Success)
		b = xdr.AppendUint32(b, uint32(claimed))
		if err := srv.vc.PostSend([]verbs.SendWR{{ID: 200, Opcode: verbs.OpSend, SGL: []verbs.SGE{srv.mr.SGE(evilSendOff, len(b))}, Signaled: true}}); err != nil {
			t.Fatal(err)
		}
	}
	call := func(max int, claimed, chunks int) ([]byte, *oncrpc.ReplySink, error) {
		sink := &oncrpc.ReplySink{File: f, Off: 100, Locate: locate}
		type result struct {
			res []byte
			err error
		}
		ch := make(chan result, 1)
		go func() {
			res, err := c.Call(ctx, &oncrpc.ClientCall{Prog: echoProg, Vers: echoVers, Proc: procRead, ReplyPayloadMax: max, Sink: sink})
			ch <- result{res, err}
		}()
		serve(claimed, chunks)
		r := <-ch
		return r.res, sink, r.err
	}
	fileIs := func(what string, want []byte) {
		t.Helper()
		got := make([]byte, fileSize)
		if _, err := f.ReadAt(got, 0); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: the sink file changed where it should not have", what)
		}
	}

	for _, bad := range []struct {
		name                 string
		max, claimed, chunks int
		want                 string
	}{
		{"a Write list for a call that offered none", 100, 64, 1, "the call offered 0"},
		{"more bytes than the call offered", evilPayload - 8, evilPayload, 1, "the call offered"},
		{"two Write chunks", evilPayload, evilPayload, 2, "2 Write chunks"},
	} {
		_, sink, err := call(bad.max, bad.claimed, bad.chunks)
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Fatalf("%s: %v, want an error with %q", bad.name, err, bad.want)
		}
		if _, ok := sink.Placed(); ok {
			t.Fatalf("%s: data placed", bad.name)
		}
		fileIs(bad.name, blank)
	}

	res, sink, err := call(evilPayload, evilPayload, 1)
	if err != nil {
		t.Fatalf("a correct reply: %v", err)
	}
	if n, ok := sink.Placed(); !ok || n != evilPayload || len(res) != 4 {
		t.Fatalf("a correct reply: placed %d, %v; %d bytes of results", n, ok, len(res))
	}
	want := append([]byte(nil), blank...)
	copy(want[100:], data)
	fileIs("a correct reply", want)
	if st := c.Stats(); st.PayloadsPlaced != 1 || st.PayloadCopies != 0 {
		t.Fatalf("stats: %+v", st)
	}
}
