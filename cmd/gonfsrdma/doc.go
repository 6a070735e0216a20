// Command gonfsrdma is an NFSv3 server for TCP and RPC-over-RDMA. It
// only turns flags into configurations (daemon, conformance, bench); the
// work happens in the library packages. No flag parsing happens there.
package main
