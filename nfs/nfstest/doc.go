// Package nfstest is the transport-neutral end-to-end suite of the NFSv3
// server: every procedure, success and error paths, driven through
// nfs/client over whatever oncrpc.Caller the dial function returns
// (loopback TCP in package nfs; the RDMA software fabric in rpcrdma).
//
// The dial function must return a Caller to a freshly started server
// whose export is an empty directory owned by root with mode 0755, and
// the handle of that root. It must arrange (t.Cleanup) to stop the server
// and check for leaks. The Caller's default credential must be AUTH_SYS
// root (uid 0, gid 0); the suite switches identity with per-call
// credentials.
package nfstest
