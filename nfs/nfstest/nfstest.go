package nfstest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gonfsrdma/gonfsrdma/nfs/client"
	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
)

// DialFunc starts a server with an empty export and connects to it.
type DialFunc func(t *testing.T) (caller oncrpc.Caller, rootFH []byte)

// Env is what each case gets.
type Env struct {
	T    *testing.T
	Ctx  context.Context
	C    *client.Client // AUTH_SYS root
	Root []byte
}

// Case is one end-to-end test.
type Case struct {
	Name string
	Run  func(e *Env)
}

// RunEndToEnd runs every case of Cases, each against a fresh server from
// dial.
func RunEndToEnd(t *testing.T, dial DialFunc) {
	for _, c := range Cases() {
		t.Run(c.Name, func(t *testing.T) {
			caller, root := dial(t)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			c.Run(&Env{T: t, Ctx: ctx, C: client.New(caller), Root: root})
		})
	}
}

// User returns a client with AUTH_SYS identity uid/gid and groups.
func (e *Env) User(uid, gid uint32, gids ...uint32) *client.Client {
	return e.C.WithCred(oncrpc.NewAuthSys("nfstest", uid, gid, gids...))
}

// OK fails the test when err is not nil.
func (e *Env) OK(err error, what string) {
	e.T.Helper()
	if err != nil {
		e.T.Fatalf("%s: %v", what, err)
	}
}

// Status fails the test unless err carries status want.
func (e *Env) Status(err error, want wire.Status, what string) {
	e.T.Helper()
	if got := client.StatusOf(err); got != want {
		e.T.Fatalf("%s: status %v (err %v), want %v", what, got, err, want)
	}
}

// Garbage fails the test unless err is an RPC GARBAGE_ARGS.
func (e *Env) Garbage(err error, what string) {
	e.T.Helper()
	var ae *oncrpc.AcceptError
	if !errors.As(err, &ae) || ae.Stat != oncrpc.GarbageArgs {
		e.T.Fatalf("%s: %v, want GARBAGE_ARGS", what, err)
	}
}

// File creates a regular file name in dir (UNCHECKED, mode) holding data
// and returns its handle.
func (e *Env) File(dir []byte, name string, mode uint32, data []byte) []byte {
	e.T.Helper()
	res, err := e.C.Create(e.Ctx, dir, name, wire.CreateHow{Mode: wire.Unchecked, Attr: wire.Sattr{Mode: wire.SetUint32{Set: true, V: mode}}})
	e.OK(err, "CREATE "+name)
	if !res.FH.Set {
		e.T.Fatalf("CREATE %s: no handle", name)
	}
	if len(data) > 0 {
		e.OK(e.C.WriteAll(e.Ctx, res.FH.FH, data), "write "+name)
	}
	return res.FH.FH
}

// Dir makes a directory name in dir with mode and returns its handle.
func (e *Env) Dir(dir []byte, name string, mode uint32) []byte {
	e.T.Helper()
	res, err := e.C.Mkdir(e.Ctx, dir, name, wire.Sattr{Mode: wire.SetUint32{Set: true, V: mode}})
	e.OK(err, "MKDIR "+name)
	return res.FH.FH
}

// Attr returns the attributes of fh.
func (e *Env) Attr(fh []byte) wire.Fattr {
	e.T.Helper()
	res, err := e.C.Getattr(e.Ctx, fh)
	e.OK(err, "GETATTR")
	return res.Attr
}

// Names lists dir with READDIR pages of count bytes.
func (e *Env) Names(dir []byte, count uint32) map[string]int {
	e.T.Helper()
	ents, err := e.C.ReaddirAll(e.Ctx, dir, count)
	e.OK(err, "READDIR")
	m := map[string]int{}
	for _, x := range ents {
		m[x.Name]++
	}
	return m
}
