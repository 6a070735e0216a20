package mount

import (
	"context"

	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// Client helpers speak MOUNT version 3. A failed MNT returns its Stat as
// the error; RPC-level failures come back as *oncrpc.AcceptError or
// *oncrpc.RejectError. Results are owned by the caller.

func call3(ctx context.Context, c oncrpc.Caller, proc uint32, args []byte) ([]byte, error) {
	return c.Call(ctx, &oncrpc.ClientCall{Prog: Prog, Vers: Vers3, Proc: proc, Args: args})
}

// Null calls MOUNTPROC3_NULL.
func Null(ctx context.Context, c oncrpc.Caller) error {
	_, err := call3(ctx, c, ProcNull, nil)
	return err
}

// Mnt mounts path (MOUNTPROC3_MNT) and returns the root file handle and
// the authentication flavors the server accepts.
func Mnt(ctx context.Context, c oncrpc.Caller, path string) (fh []byte, flavors []uint32, err error) {
	res, err := call3(ctx, c, ProcMnt, AppendDirpath(nil, path))
	if err != nil {
		return nil, nil, err
	}
	return DecodeMountRes(xdr.NewReader(res))
}

// Umnt removes the caller's mount of path from the server's list
// (MOUNTPROC3_UMNT).
func Umnt(ctx context.Context, c oncrpc.Caller, path string) error {
	_, err := call3(ctx, c, ProcUmnt, AppendDirpath(nil, path))
	return err
}

// UmntAll removes every mount of the caller (MOUNTPROC3_UMNTALL).
func UmntAll(ctx context.Context, c oncrpc.Caller) error {
	_, err := call3(ctx, c, ProcUmntAll, nil)
	return err
}

// Dump returns the server's mount list (MOUNTPROC3_DUMP).
func Dump(ctx context.Context, c oncrpc.Caller) ([]Entry, error) {
	res, err := call3(ctx, c, ProcDump, nil)
	if err != nil {
		return nil, err
	}
	return DecodeMountList(xdr.NewReader(res))
}

// Exports returns the server's export list (MOUNTPROC3_EXPORT), paths
// with their client groups; AuthFlavors is not on the wire and stays nil.
func Exports(ctx context.Context, c oncrpc.Caller) ([]Export, error) {
	res, err := call3(ctx, c, ProcExport, nil)
	if err != nil {
		return nil, err
	}
	return DecodeExports(xdr.NewReader(res))
}
