//go:build !linux

package oncrpc

import (
	"net"
	"syscall"

	"go.uber.org/zap"
)

// Splicing needs Linux's splice(2); elsewhere READ payloads are copied.

type spliceBuffer struct{ used int }

type pipePool struct{}

func newPipePool(int, *zap.Logger) *pipePool { return nil }

func (pp *pipePool) closeAll() {}

func (s *tcpSlot) releasePipe() {}

// CanSplice implements Exchange: no splicing here.
func (s *tcpSlot) CanSplice() bool { return false }

// SpliceFile implements Exchange: no splicing here.
func (s *tcpSlot) SpliceFile(int, int64, int) (int, error) { return 0, ErrNoSplice }

func rawSocket(net.Conn) syscall.RawConn { return nil }

func (tc *tcpConn) sendSpliced([][]byte, *tcpSlot, bool) error { return ErrNoSplice }
