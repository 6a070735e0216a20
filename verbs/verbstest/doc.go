// Package verbstest is the conformance suite every verbs.Provider passes:
// the software fabric (verbs/softfabric) in go test, a real device with
// -tags rdmahw (verbs/hw_test.go). Run runs every case against a fresh
// Env; ConnectPair and the helpers beside it set up a connected pair
// with one MR per side for provider-specific tests.
//
// # Buffer ownership
//
// A Pair's MRs belong to the test; Receives the helpers post use the
// layout of the constants (RecvOff, SendOff, DataOff inside MRSize) and
// are the provider's until polled, as in verbs.
package verbstest
