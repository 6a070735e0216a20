package nlm

import (
	"context"

	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// Client helpers for tests and the conformance suite: each sends one call
// of version vers and decodes its result. Results are freshly allocated.

func call(ctx context.Context, c oncrpc.Caller, vers, proc uint32, args []byte) (*xdr.Reader, error) {
	res, err := c.Call(ctx, &oncrpc.ClientCall{Prog: Prog, Vers: vers, Proc: proc, Args: args})
	if err != nil {
		return nil, err
	}
	return xdr.NewReader(res), nil
}

func res(ctx context.Context, c oncrpc.Caller, vers, proc uint32, args []byte) (Res, error) {
	var out Res
	r, err := call(ctx, c, vers, proc, args)
	if err != nil {
		return out, err
	}
	return out, out.Decode(r)
}

// Null calls NLM_NULL.
func Null(ctx context.Context, c oncrpc.Caller, vers uint32) error {
	_, err := call(ctx, c, vers, ProcNull, nil)
	return err
}

// CallTest calls TEST.
func CallTest(ctx context.Context, c oncrpc.Caller, vers uint32, a *TestArgs) (TestRes, error) {
	var out TestRes
	r, err := call(ctx, c, vers, ProcTest, a.Append(nil, vers))
	if err != nil {
		return out, err
	}
	return out, out.Decode(r, vers)
}

// CallLock calls LOCK (or NM_LOCK with proc ProcNMLock).
func CallLock(ctx context.Context, c oncrpc.Caller, vers, proc uint32, a *LockArgs) (Res, error) {
	return res(ctx, c, vers, proc, a.Append(nil, vers))
}

// CallCancel calls CANCEL.
func CallCancel(ctx context.Context, c oncrpc.Caller, vers uint32, a *CancelArgs) (Res, error) {
	return res(ctx, c, vers, ProcCancel, a.Append(nil, vers))
}

// CallUnlock calls UNLOCK.
func CallUnlock(ctx context.Context, c oncrpc.Caller, vers uint32, a *UnlockArgs) (Res, error) {
	return res(ctx, c, vers, ProcUnlock, a.Append(nil, vers))
}

// CallGrantedRes calls GRANTED_RES, the answer to a GRANTED_MSG.
func CallGrantedRes(ctx context.Context, c oncrpc.Caller, vers uint32, r *Res) error {
	_, err := call(ctx, c, vers, ProcGrantedRes, r.Append(nil))
	return err
}

// CallShare calls SHARE or UNSHARE (proc).
func CallShare(ctx context.Context, c oncrpc.Caller, vers, proc uint32, a *ShareArgs) (ShareRes, error) {
	var out ShareRes
	r, err := call(ctx, c, vers, proc, a.Append(nil))
	if err != nil {
		return out, err
	}
	return out, out.Decode(r)
}

// CallFreeAll calls FREE_ALL.
func CallFreeAll(ctx context.Context, c oncrpc.Caller, vers uint32, n *Notify) error {
	_, err := call(ctx, c, vers, ProcFreeAll, n.Append(nil))
	return err
}

// CallMsg sends one of the _MSG procedures with its encoded arguments;
// the server answers void and sends the result to the caller's NLM.
func CallMsg(ctx context.Context, c oncrpc.Caller, vers, proc uint32, args []byte) error {
	_, err := call(ctx, c, vers, proc, args)
	return err
}
