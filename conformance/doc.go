// Package conformance is a pynfs-style conformance suite for NFS version 3
// servers (RFC 1813), the MOUNT protocol (RFC 1813 appendix I), rpcbind
// (RFC 1833) and ONC RPC (RFC 5531), runnable against any server: this one
// or knfsd.
//
// Tests live in one static table (Tests), each with a code (GATTR1, WR3,
// RPC2...), flags naming the areas it covers, the codes it depends on and
// a one-line description citing the RFC section it checks. A test whose
// dependency did not pass is OMIT. Run selects tests by flag or code,
// pulls in their dependencies, runs them in table order and prints one line
// per test and a closing count; WriteJSON and WriteJUnit record a Summary.
//
// # Environment
//
// Run mounts the export once (MOUNT v3 MNT), connects to NFS and gives each
// test an Env: the addresses, the export's root handle, a client factory
// and a fresh scratch directory created for that test below the base tree
// (BaseTree, in the export root; Config.MakeTree recreates it).
//
// Ownership: an Env and its connections belong to one test at a time;
// results returned by the suite are owned by the caller.
package conformance
