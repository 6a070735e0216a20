package client

// readfile.go: READ whose data goes into a local file (the client-side
// receive path of `gonfsrdma cp` nfs:// -> local). On TCP the oncrpc
// reader moves the data from the socket into the file itself
// (oncrpc.ReplySink), without a user-space copy; elsewhere the reply is
// read as by ReadInto and its data written with pwrite.

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// ReadToFile calls READ of count bytes at offset and writes the data into
// f at fileOff, never past fileOff+count. It returns the results without
// the data (res.Data is nil), how many bytes of data it wrote, and whether
// the transport wrote them (direct) rather than ReadToFile's pwrite. buf is
// lent for the reply when the data cannot go into f straight from the
// transport, as for ReadInto (capacity count+ReadOverhead; nil allocates).
// A failed write into f is a *LocalWriteError.
func (c *Client) ReadToFile(ctx context.Context, fh []byte, offset uint64, count uint32, f *os.File, fileOff int64, buf []byte) (res *wire.ReadRes, n int, direct bool, err error) {
	args := wire.ReadArgs{FH: fh, Offset: offset, Count: count}
	sink := &oncrpc.ReplySink{File: f, Off: fileOff, Locate: LocateReadData}
	cc := oncrpc.ClientCall{Proc: wire.ProcRead, Args: args.Append(nil), ReplyPayloadMax: int(count), ReplyBuf: buf, Sink: sink}
	cc.Prog, cc.Vers, cc.Cred = wire.Program, wire.Version, c.cred
	b, err := c.c.Call(ctx, &cc)
	var swe *oncrpc.SinkWriteError
	if errors.As(err, &swe) {
		return nil, 0, false, &LocalWriteError{Err: swe.Err}
	}
	if err != nil {
		return nil, 0, false, err
	}
	res = new(wire.ReadRes)
	if n, ok := sink.Placed(); ok {
		// The data went into f; the results are its head alone.
		r := xdr.NewReader(b)
		dataLen, err := decodeReadHead(r, res)
		if err == nil && (dataLen != n || r.Len() != 0) {
			err = fmt.Errorf("%d bytes after a head for %d bytes of data, %d placed", r.Len(), dataLen, n)
		}
		if err != nil {
			return nil, 0, false, fmt.Errorf("nfs READ: malformed reply: %w", err)
		}
		return res, n, true, nil
	}
	if err := res.Decode(xdr.NewReader(b)); err != nil {
		return nil, 0, false, fmt.Errorf("nfs READ: malformed reply: %w", err)
	}
	if err := check(wire.ProcRead, res.Status); err != nil {
		return res, 0, false, err
	}
	data := res.Data
	res.Data = nil
	if len(data) > int(count) {
		return res, 0, false, fmt.Errorf("nfs READ: server returned %d bytes for a READ of %d", len(data), count)
	}
	if len(data) > 0 {
		if _, err := f.WriteAt(data, fileOff); err != nil {
			return res, 0, false, &LocalWriteError{Err: err}
		}
	}
	return res, len(data), false, nil
}

// LocateReadData is READ's oncrpc.ReplySink.Locate: given the start of
// READ3res (RFC 1813 section 3.3.6), it returns where the data of a
// READ3resok starts and its length; ok is false for an error status or a
// head that does not parse.
func LocateReadData(results []byte) (dataOff, dataLen int, ok bool) {
	var res wire.ReadRes
	r := xdr.NewReader(results)
	n, err := decodeReadHead(r, &res)
	if err != nil {
		return 0, 0, false
	}
	return r.Offset(), n, true
}

// decodeReadHead decodes READ3res up to and including the data's length
// word, which it returns. An error status is an error.
func decodeReadHead(r *xdr.Reader, res *wire.ReadRes) (int, error) {
	res.Status = wire.Status(r.Uint32())
	if r.Err() == nil && res.Status != wire.OK {
		return 0, check(wire.ProcRead, res.Status)
	}
	res.Attr.Decode(r)
	res.Count = r.Uint32()
	res.EOF = r.Bool()
	n := r.Uint32()
	if err := r.Err(); err != nil {
		return 0, err
	}
	if n > wire.MaxData {
		return 0, &xdr.LengthError{Length: n, Max: wire.MaxData}
	}
	return int(n), nil
}

// LocalWriteError is READ data that could not be written into the local
// file: the NFS call itself succeeded.
type LocalWriteError struct{ Err error }

func (e *LocalWriteError) Error() string { return fmt.Sprintf("writing READ data: %v", e.Err) }
func (e *LocalWriteError) Unwrap() error { return e.Err }
