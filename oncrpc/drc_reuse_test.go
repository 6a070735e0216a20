package oncrpc

import (
	"bytes"
	"net/netip"
	"testing"
	"time"
)

// TestDRCReusedEntries: entries and reply buffers the cache drops are
// reused by later calls, and that never shows. A replay handed out
// keeps its bytes while later calls reuse the entry it came from; a call
// in progress is never dropped or reused, however many calls pass it; a
// finished call is replayed with its own reply, whatever size its
// entry's buffer had before; and the byte budget holds (it counts the
// buffers' capacity).
func TestDRCReusedEntries(t *testing.T) {
	const maxBytes = 16 << 10
	d := NewDRC(4, maxBytes, time.Minute)
	conn := &Peer{Remote: netip.MustParseAddrPort("127.0.0.1:700")}
	key := func(xid uint32) drcKey { return newDRCKey(&Call{CallHeader: CallHeader{XID: xid}, Conn: conn}) }
	body := func(xid uint32) []byte {
		// Sizes from 8 to ~1000 bytes, so that buffers are reused for
		// replies both smaller and larger than the ones they held.
		n := 8 + int(xid*389%1000)
		return bytes.Repeat([]byte{byte(xid)}, n)
	}
	run := func(xid uint32) {
		t.Helper()
		k := key(xid)
		if act, _ := d.begin(k, nil); act != drcRun {
			t.Fatalf("xid %d: new call not run", xid)
		}
		r := Reply{Head: body(xid)}
		d.finish(k, &r)
	}
	busy := key(1 << 30)
	if act, _ := d.begin(busy, nil); act != drcRun {
		t.Fatal("the call in progress was not run")
	}
	run(1)
	act, held := d.begin(key(1), []byte("head:"))
	if act != drcReplay || !bytes.Equal(held, append([]byte("head:"), body(1)...)) {
		t.Fatalf("replay of xid 1: %v %q", act, held)
	}
	heldCopy := bytes.Clone(held)
	for xid := uint32(2); xid < 200; xid++ {
		run(xid)
		// The newest three calls are answered from the cache with their
		// own replies (it holds 4 entries, one of them in progress;
		// replayed oldest first, so they stay the newest three).
		for x := max(xid, 4) - 2; x <= xid; x++ {
			act, got := d.begin(key(x), nil)
			if act != drcReplay {
				t.Fatalf("after xid %d: xid %d not replayed (%v)", xid, x, act)
			}
			if !bytes.Equal(got, body(x)) {
				t.Fatalf("after xid %d: xid %d replayed %d bytes of %d, not its reply", xid, x, len(got), len(body(x)))
			}
		}
		if act, _ := d.begin(busy, nil); act != drcDrop {
			t.Fatalf("after xid %d: the call in progress is %v, want dropped", xid, act)
		}
		if d.bytes > maxBytes || d.Len() > 4 {
			t.Fatalf("after xid %d: %d bytes in %d entries, bounds %d and 4", xid, d.bytes, d.Len(), maxBytes)
		}
		total := 0
		for e := d.head.next; e != &d.head; e = e.next {
			if !e.done {
				continue
			}
			total += cap(e.reply)
			if cap(e.reply) > 2*len(e.reply) {
				t.Fatalf("after xid %d: a %d-byte reply holds a %d-byte buffer", xid, len(e.reply), cap(e.reply))
			}
		}
		if total != d.bytes {
			t.Fatalf("after xid %d: entries hold %d bytes, counted %d", xid, total, d.bytes)
		}
		// Every tenth call gets a spare entry (its buffer not yet
		// counted) and a reply too large to cache: dropping it must
		// not take its buffer off the count.
		if xid%10 == 0 {
			k := key(1<<20 + xid)
			if act, _ := d.begin(k, nil); act != drcRun {
				t.Fatalf("after xid %d: the large call was not run", xid)
			}
			big := Reply{Head: make([]byte, maxBytes/4+1)}
			before := d.bytes
			d.finish(k, &big)
			if d.bytes != before {
				t.Fatalf("after xid %d: a reply too large to cache moved the count from %d to %d", xid, before, d.bytes)
			}
		}
	}
	if !bytes.Equal(held, heldCopy) {
		t.Fatal("a replay handed out changed when its entry was reused")
	}
	if d.spares == 0 || d.spares > maxSpares {
		t.Fatalf("%d spare entries, want 1 to %d", d.spares, maxSpares)
	}
	r := Reply{Head: []byte("busy")}
	d.finish(busy, &r)
	if act, got := d.begin(busy, nil); act != drcReplay || string(got) != "busy" {
		t.Fatalf("the call that was in progress: %v %q", act, got)
	}
}
