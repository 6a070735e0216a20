package wr

import "testing"

func TestIDRoundTrip(t *testing.T) {
	for _, k := range []Kind{Recv, Read, Send, Other, LocalInv, ReadChain, Write} {
		for _, i := range []int{0, 1, 127, 1<<32 - 1} {
			if gk, gi := Split(ID(k, i)); gk != k || gi != i {
				t.Fatalf("Split(ID(%d, %d)) = %d, %d", k, i, gk, gi)
			}
		}
	}
}
