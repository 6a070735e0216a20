package oncrpc

import (
	"bufio"
	"context"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"go.uber.org/zap"

	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// benchFileReplies measures 1 MiB file-backed replies over loopback TCP,
// spliced or copied (pread into AllocPayload), depth 4 outstanding. It
// reports the process's CPU per GiB (client and server together: on
// loopback the kernel's TCP work lands on both).
func benchFileReplies(b *testing.B, splice bool) {
	const size = 64 << 20
	path := filepath.Join(b.TempDir(), "data")
	if err := os.WriteFile(path, make([]byte, size), 0o644); err != nil {
		b.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	handler := func(_ context.Context, c *Call, r *Reply) error {
		rd := xdr.NewReader(c.Args)
		off, count := int64(rd.Uint64()), int(rd.Uint32())
		if splice {
			n, err := r.SpliceFile(int(f.Fd()), off, count)
			if err != nil {
				return err
			}
			r.Head = xdr.AppendUint32(r.Head, uint32(n))
			return nil
		}
		p := r.AllocPayload(count)
		n, err := f.ReadAt(p, off)
		if err != nil {
			return err
		}
		r.Head = xdr.AppendUint32(r.Head, uint32(n))
		r.SetPayload(p[:n])
		return nil
	}
	prog := &Program{Prog: 400002, Name: "file", Versions: []Version{{Vers: 1, Procs: []Procedure{
		{Name: "NULL", Idempotent: true, Handler: func(context.Context, *Call, *Reply) error { return nil }},
		{Name: "READ", Idempotent: true, Handler: handler},
	}}}}
	srv := NewServer(zap.NewNop(), NewDispatcher(zap.NewNop(), nil, prog), ServerConfig{SpliceReads: splice})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go srv.ServeTCP(l)
	defer srv.Shutdown(context.Background())
	conn, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	call := func(i int) []byte {
		h := CallHeader{XID: uint32(i), Prog: 400002, Vers: 1, Proc: 1}
		msg := AppendCallHeader(nil, &h)
		msg = xdr.AppendUint64(msg, uint64(i%(size>>20))<<20)
		msg = xdr.AppendUint32(msg, 1<<20)
		return append(AppendRecordMark(nil, len(msg)), msg...)
	}
	in := bufio.NewReaderSize(conn, 64<<10)
	rec := make([]byte, 0, 2<<20)
	var r0, r1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &r0)
	b.SetBytes(1 << 20)
	b.ResetTimer()
	sent, got := 0, 0
	for got < b.N {
		for sent < b.N && sent-got < 4 {
			if _, err := conn.Write(call(sent)); err != nil {
				b.Fatal(err)
			}
			sent++
		}
		if rec, err = ReadRecord(in, rec, 4<<20); err != nil {
			b.Fatal(err)
		}
		got++
	}
	b.StopTimer()
	syscall.Getrusage(syscall.RUSAGE_SELF, &r1)
	cpu := float64(r1.Utime.Nano()+r1.Stime.Nano()-r0.Utime.Nano()-r0.Stime.Nano()) / 1e9
	b.ReportMetric(cpu/(float64(b.N)/1024), "cpu-s/GiB")
}

func BenchmarkFileReplySplice(b *testing.B) { benchFileReplies(b, true) }
func BenchmarkFileReplyCopy(b *testing.B)   { benchFileReplies(b, false) }
