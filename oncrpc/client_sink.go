package oncrpc

// client_sink.go, client side only (the server's decoding path does not use
// it): a call's ReplySink lets the TCP reader move the bulk data of the
// call's reply (READ data) from the socket into a file at an offset,
// without the data passing through a user-space buffer. On Linux the
// reader splices it (socket -> pipe, which references the socket's pages,
// -> file, one copy into the page cache); bytes the reader had already
// buffered are written with pwrite(2). Everything of the reply except the
// data (RPC header, results head, anything after the data) is read into
// memory and returned by Call as usual, with the data and its padding cut
// out.
//
// Ownership: the reader writes to Sink.File only between claiming the call
// (under Client.mu, like a lent ReplyBuf) and handing it its result. A
// caller that gives up on the call waits in abandon until the reader lets
// go, so once Call returns nothing of the Client touches the file. The
// file is written only inside [Off, Off+ReplyPayloadMax).

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// ReplySink asks a transport to write the bulk data part of a call's
// SUCCESS reply into File at Off (pwrite semantics: File's own offset
// does not move) instead of returning it. It is a hint: a transport that
// cannot (UDP, a connection that is not a socket, a reply Locate does not
// accept) returns the reply whole and Placed says so. A transport that
// receives the data apart from the results (RPC-over-RDMA's Write chunk,
// RFC 8166 section 3.4.6) writes it from where it landed with Place. The
// reply's data may be at most the call's ReplyPayloadMax bytes long; a
// reply claiming more is returned whole, for the caller's decoder to
// judge.
type ReplySink struct {
	File *os.File
	Off  int64
	// Locate is given the first bytes of the results (after the RPC reply
	// header: at most SinkHeadMax bytes, fewer when the reply is shorter)
	// and returns where in the results the data starts and how long it is
	// (XDR padding follows it). ok false leaves the reply whole (an error
	// status, a head it cannot parse). It runs on the connection's reader
	// goroutine; what it records is the caller's to read once Call
	// returns.
	Locate func(results []byte) (dataOff, dataLen int, ok bool)

	placed  int
	isPlace bool
}

// SinkHeadMax is how much of a reply's results a Client reads before it
// asks ReplySink.Locate where the data is: room for NFSv3's READ3resok
// head (RFC 1813 section 3.3.6) with an RPC verifier of the largest size
// (RFC 5531 section 8.2) to spare.
const SinkHeadMax = 1024

// Placed reports whether the data of the last reply went into File, and
// how many bytes of it. When it did not, Call's results hold the data as
// usual.
func (s *ReplySink) Placed() (n int, ok bool) { return s.placed, s.isPlace }

func (s *ReplySink) reset() { s.placed, s.isPlace = 0, false }

// Place is for a transport that holds a SUCCESS reply's data apart from
// its results: results are the reply's results up to where the data was
// cut out (for NFSv3 READ, the head through the data's length word), data
// the bulk data. When Locate puts data of len(data) bytes right at the end
// of results, Place writes data into File at Off and Placed reports it;
// the caller then returns results alone. Otherwise (no File or Locate, an
// error status, a head that does not describe data) it writes nothing and
// returns false, and the caller returns the reply whole. A failed write
// is a *SinkWriteError. Place resets what Placed reports first, so a
// transport calls it once per reply of a call with a sink.
func (s *ReplySink) Place(results, data []byte) (bool, error) {
	s.reset()
	if s.File == nil || s.Locate == nil || len(data) == 0 {
		return false, nil
	}
	off, n, ok := s.Locate(results[:min(len(results), SinkHeadMax)])
	if !ok || off != len(results) || n != len(data) {
		return false, nil
	}
	if _, err := s.File.WriteAt(data, s.Off); err != nil {
		return false, &SinkWriteError{Err: err}
	}
	s.placed, s.isPlace = n, true
	return true, nil
}

// SinkWriteError is a reply whose data could not be written into its
// ReplySink's file (the connection stays usable: the rest of the reply
// was read and dropped). Retrying the call would likely fail the same way.
type SinkWriteError struct{ Err error }

func (e *SinkWriteError) Error() string {
	return fmt.Sprintf("oncrpc: writing reply data into the file: %v", e.Err)
}

func (e *SinkWriteError) Unwrap() error { return e.Err }

// sinkResult is what readSinkRecord did with a reply.
type sinkResult struct {
	msg    []byte // the message without its data (or whole when !placed)
	placed bool
	n      int   // the data's length, when placed
	werr   error // the file write failed (the stream is in step)
}

// readSinkRecord reads the record whose mark readStream peeked (a single,
// last fragment of n bytes) for the call p, which has a sink. st tracks
// the record for skipRecord, should the read be interrupted. A reply
// Locate does not accept is read whole (into p.buf when it fits).
func (c *Client) readSinkRecord(p *pendingCall, cc *ReplySink, max int, st *recordState) (sinkResult, error) {
	if err := c.nextFragment(st); err != nil {
		return sinkResult{}, err
	}
	n := st.left
	head, err := c.br.Peek(min(n, sinkPeekMax()))
	if err != nil {
		return sinkResult{}, eofInRecord(err)
	}
	dataAt, dataLen, ok := locateSinkData(head, n, max, cc.Locate)
	if !ok {
		var buf []byte
		if cap(p.buf) >= n {
			buf = p.buf[:0]
		}
		msg, err := readFragmentData(c.br, buf, st)
		return sinkResult{msg: msg}, err
	}
	msg := make([]byte, dataAt, dataAt+64)
	copy(msg, head[:dataAt])
	c.br.Discard(dataAt)
	st.left -= dataAt
	werr, err := c.placeData(cc, dataLen, st)
	if err != nil {
		return sinkResult{}, err
	}
	if pad := xdr.Pad(dataLen); pad > 0 {
		m, err := c.br.Discard(pad)
		st.left -= m
		if err != nil {
			return sinkResult{}, eofInRecord(err)
		}
	}
	// Whatever follows the data (nothing for READ) stays with the message.
	msg, err = readFragmentData(c.br, msg, st)
	if err != nil {
		return sinkResult{}, err
	}
	return sinkResult{msg: msg, placed: true, n: dataLen, werr: werr}, nil
}

// sinkPeekMax is how much of a record readSinkRecord peeks at: the RPC
// reply header's fixed part and largest verifier, then SinkHeadMax of
// results, within the read buffer.
func sinkPeekMax() int { return min(clientReadBuffer, 24+MaxAuthBytes+SinkHeadMax) }

// locateSinkData finds a reply's data in head, the first bytes of a
// record of n bytes: it returns the data's offset in the message and its
// length, or ok false when the reply is not a SUCCESS, Locate refuses it,
// or what Locate says does not fit the head, the record or max.
func locateSinkData(head []byte, n, max int, locate func([]byte) (int, int, bool)) (at, length int, ok bool) {
	rh, off, err := DecodeReplyHeader(head)
	if err != nil || rh.ReplyStat != MsgAccepted || rh.AcceptStat != Success {
		return 0, 0, false
	}
	results := head[off:]
	if len(results) > SinkHeadMax {
		results = results[:SinkHeadMax]
	}
	dataOff, dataLen, ok := locate(results)
	if !ok || dataOff < 0 || dataOff > len(results) || dataLen < 0 || dataLen > max {
		return 0, 0, false
	}
	at = off + dataOff
	if int64(at)+int64(dataLen)+int64(xdr.Pad(dataLen)) > int64(n) {
		return 0, 0, false
	}
	return at, dataLen, true
}

// placeData moves dataLen bytes of the record from the stream into the
// sink's file: what the read buffer holds with pwrite, the rest straight
// from the socket. A failed file write (werr) does not stop it: the rest
// of the data is read and dropped so the stream stays in step. err is a
// stream failure (the connection is lost, or the read was interrupted).
func (c *Client) placeData(s *ReplySink, dataLen int, st *recordState) (werr, err error) {
	done := 0
	if k := min(c.br.Buffered(), dataLen); k > 0 {
		b, _ := c.br.Peek(k)
		if _, e := s.File.WriteAt(b, s.Off); e != nil {
			werr = e
		}
		c.br.Discard(k)
		st.left -= k
		done = k
	}
	if done < dataLen && werr == nil {
		var m int
		m, werr, err = c.spliceToFile(s.File, s.Off+int64(done), dataLen-done)
		st.left -= m
		done += m
		if err != nil {
			return werr, err
		}
	}
	if done < dataLen {
		// The file failed: drop the rest from the stream.
		m, e := c.br.Discard(dataLen - done)
		st.left -= m
		if e != nil {
			return werr, eofInRecord(e)
		}
	}
	return werr, nil
}

// eofInRecord turns an EOF inside a record into io.ErrUnexpectedEOF.
func eofInRecord(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// copyToFile moves n bytes of the stream into f at off through a buffer
// (a connection without a socket, a system without splice). It stops at
// the first file write error, having consumed the bytes of that step.
func (c *Client) copyToFile(f *os.File, off int64, n int) (done int, werr, err error) {
	if c.sinkBuf == nil {
		c.sinkBuf = make([]byte, clientReadBuffer)
	}
	for done < n {
		m, rerr := io.ReadFull(c.br, c.sinkBuf[:min(n-done, len(c.sinkBuf))])
		if m > 0 {
			if _, e := f.WriteAt(c.sinkBuf[:m], off+int64(done)); e != nil {
				werr = e
			}
		}
		done += m
		if rerr != nil {
			return done, werr, eofInRecord(rerr)
		}
		if werr != nil {
			return done, werr, nil
		}
	}
	return done, nil, nil
}
