package oncrpc

import (
	"bufio"
	"net"
	"testing"
)

// benchNullTCP sends b.N NULL calls over one loopback TCP connection with
// depth calls outstanding and reads every reply: the cost of the TCP
// transport's per-call path (read, hand-offs, write), not of a handler.
func benchNullTCP(b *testing.B, depth int) {
	env := newTestEnv(b, ServerConfig{})
	conn, err := net.Dial("tcp", env.addr)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	h := CallHeader{XID: 1, Prog: 400000, Vers: 2, Proc: 0}
	msg := AppendCallHeader(nil, &h)
	call := AppendRecordMark(nil, len(msg))
	call = append(call, msg...)
	in := bufio.NewReaderSize(conn, 64<<10)
	var rec []byte
	b.ReportAllocs()
	b.ResetTimer()
	sent, got := 0, 0
	for got < b.N {
		for sent < b.N && sent-got < depth {
			if _, err := conn.Write(call); err != nil {
				b.Fatal(err)
			}
			sent++
		}
		if rec, err = ReadRecord(in, rec, 1<<20); err != nil {
			b.Fatal(err)
		}
		got++
	}
}

func BenchmarkTCPNullDepth1(b *testing.B)  { benchNullTCP(b, 1) }
func BenchmarkTCPNullDepth16(b *testing.B) { benchNullTCP(b, 16) }
