// Package bench measures an NFSv3 server the way a file-system benchmark
// would, over one connection of the project's own client (TCP or
// RPC-over-RDMA): sequential write (UNSTABLE, then COMMIT) and read with a
// configurable block size and queue depth, 4 KiB random-read IOPS, and
// metadata rates (CREATE, LOOKUP+GETATTR, REMOVE) over many files.
//
// Every byte read back is checked against a deterministic pattern derived
// from a per-run seed and the file offset (Fill, Verify): a server that
// returns wrong or stale data fails the run with a *VerifyError instead of
// scoring well. The check's time is measured apart (Phase.MeanVerifyUs):
// a call's latency (Phase.MeanLatencyUs) runs from the call to its decoded
// reply and leaves the client's verification out.
//
// Queue depth is the number of calls outstanding at once on the single
// connection; the oncrpc and rpcrdma clients match replies by XID.
//
// Run does no flag parsing and prints nothing but the optional progress
// line; the CLI (cmd/gonfsrdma bench) turns flags into a Config and formats
// the Result (WriteTable, JSON). Server CPU accounting is injected as a
// function (Config.ServerCPU; ProcCPU reads /proc/PID/stat).
//
// Ownership: Run owns the connections it dials and the working directory
// it creates below the export, and removes both before it returns, also
// on failure when the server still answers.
package bench
