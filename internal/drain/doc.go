// Package drain holds the graceful-shutdown wait that the TCP server
// (oncrpc) and the RPC-over-RDMA server (rpcrdma) share. It owns no
// state: the caller keeps its WaitGroup, its context and its connections.
package drain
