//go:build !linux

package verbs

// RaiseMemlock does nothing outside Linux.
func RaiseMemlock(need uint64) error { return nil }
