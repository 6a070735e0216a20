package verbs

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// Tests of the API itself and of the build without RDMA; the providers'
// behaviour is tested by the conformance suite (verbs/verbstest) against
// the software fabric (verbs/softfabric) and a real device (hw_test.go).

func TestStatusStrings(t *testing.T) {
	for _, c := range []struct {
		got, want string
	}{
		{WCRemAccessErr.String(), "IBV_WC_REM_ACCESS_ERR"},
		{WCRemAccessErr.Description(), "remote access error"},
		{WCRNRRetryExcErr.String(), "IBV_WC_RNR_RETRY_EXC_ERR"},
		{WCWRFlushErr.String(), "IBV_WC_WR_FLUSH_ERR"},
		{WCLocLenErr.Description(), "local length error"},
		{WCTMRndvIncomplete.String(), "IBV_WC_TM_RNDV_INCOMPLETE"},
		{WCStatus(99).String(), "IBV_WC_STATUS(99)"},
		{EventQPAccessErr.String(), "IBV_EVENT_QP_ACCESS_ERR"},
		{EventWQFatal.String(), "IBV_EVENT_WQ_FATAL"},
		{WCRecv.String(), "IBV_WC_RECV"},
		{OpSendWithInv.String(), "SEND_WITH_INV"},
		{(&WCError{Status: WCRemAccessErr, WRID: 7}).Error(), "verbs: send work request 7 failed: IBV_WC_REM_ACCESS_ERR (remote access error)"},
		{ErrNoRDMA.Error(), "verbs: built without RDMA support"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
	wc := Completion{WRID: 3, Status: WCLocLenErr, Recv: true}
	if err := wc.Err(); !errors.Is(err, WCLocLenErr) || errors.Is(err, WCRemAccessErr) {
		t.Errorf("errors.Is on %v", err)
	}
}

func TestRaiseMemlock(t *testing.T) {
	if err := RaiseMemlock(0); err != nil {
		t.Fatalf("RaiseMemlock(0): %v", err)
	}
	err := RaiseMemlock(^uint64(0) - 1)
	if err != nil && !strings.Contains(err.Error(), "LimitMEMLOCK") {
		t.Errorf("error does not say what to change: %v", err)
	}
}

func TestNoRDMABuild(t *testing.T) {
	if RDMASupported {
		t.Skip("built with RDMA support")
	}
	if _, err := NewRDMAProvider(); !errors.Is(err, ErrNoRDMA) {
		t.Fatalf("NewRDMAProvider: %v", err)
	}
}

func TestRDMAProviderWithoutDevice(t *testing.T) {
	if !RDMASupported {
		t.Skip("built without RDMA support")
	}
	p, err := NewRDMAProvider()
	if err == nil {
		p.Close()
		t.Skip("an RDMA device is present; hw_test.go (-tags rdmahw) covers it")
	}
	if !errors.Is(err, ErrNoDevice) {
		t.Errorf("NewRDMAProvider without a device: %v, want ErrNoDevice", err)
	}
}

// TestAckTimeoutExponent: the smallest exponent whose 4.096 µs × 2^n
// covers the duration, and QPAttributes.AckTimeout its inverse.
func TestAckTimeoutExponent(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want uint8
	}{
		{0, 1}, {8192 * time.Nanosecond, 1}, {8193 * time.Nanosecond, 2},
		{67 * time.Millisecond, 14}, {268 * time.Millisecond, 16}, {269 * time.Millisecond, 17},
		{2147483648 * time.Nanosecond, 19}, {100 * time.Hour, 31},
	} {
		if got := AckTimeoutExponent(c.d); got != c.want {
			t.Errorf("AckTimeoutExponent(%v) = %d, want %d", c.d, got, c.want)
		}
	}
	for n := uint8(1); n <= 31; n++ {
		if got := AckTimeoutExponent(QPAttributes{Timeout: n}.AckTimeout()); got != n {
			t.Errorf("exponent %d -> %v -> %d", n, QPAttributes{Timeout: n}.AckTimeout(), got)
		}
	}
}
