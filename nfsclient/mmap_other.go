//go:build !linux

package nfsclient

import "io"

// mapped and mapSource: sources are read with ReadAt (see mmap_linux.go).
type mapped struct{ b []byte }

func (m *mapped) ReadAt(p []byte, off int64) (int, error) { return 0, io.EOF }
func (m *mapped) unmap()                                  {}

func (fl *File) mapSource(io.ReaderAt, int64, int64) (*mapped, bool) { return nil, false }
