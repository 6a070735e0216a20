// Package vfstest holds test helpers for vfs backends: a leak-tracking
// billy.Filesystem wrapper, CheckNoLeaks, and RunFSTests, the conformance
// suite every vfs.FS must pass.
//
// Ownership: a TrackingFS owns nothing but its counters; the files it
// returns wrap (and are owned by) the caller, who must Close them.
package vfstest
