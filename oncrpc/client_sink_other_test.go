//go:build !linux

package oncrpc

const spliceSupported = false
