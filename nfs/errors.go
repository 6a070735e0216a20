package nfs

import (
	"errors"
	"io/fs"
	"syscall"

	"go.uber.org/zap"

	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/vfs"
)

// Errors come in three tiers (style rule 10): transport-fatal errors never
// reach this package; RPC-level errors are what handlers return
// (oncrpc.ErrGarbageArgs for arguments that do not decode); everything
// else is an nfsstat3 result, and this file is the one place that maps a
// backend error to one.

// status maps a backend error to nfsstat3. Errors with no better mapping
// are NFS3ERR_IO, logged with the procedure name.
func (s *Server) status(proc string, err error) wire.Status {
	switch {
	case err == nil:
		return wire.OK
	case errors.Is(err, vfs.ErrStale):
		return wire.ErrStale
	case errors.Is(err, vfs.ErrBadHandle):
		return wire.ErrBadHandle
	case errors.Is(err, vfs.ErrNotSupported):
		return wire.ErrNotSupp
	case errors.Is(err, vfs.ErrExclusiveMismatch):
		return wire.ErrExist
	case errors.Is(err, vfs.ErrBadCookie):
		return wire.ErrBadCookie
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		if st, ok := errnoStatus(errno); ok {
			return st
		}
	} else {
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return wire.ErrNoEnt
		case errors.Is(err, fs.ErrExist):
			return wire.ErrExist
		case errors.Is(err, fs.ErrPermission):
			return wire.ErrAcces
		case errors.Is(err, fs.ErrInvalid):
			return wire.ErrInval
		}
	}
	s.log.Warn("backend error answered with NFS3ERR_IO", zap.String("proc", proc), zap.Error(err))
	return wire.ErrIO
}

func errnoStatus(e syscall.Errno) (wire.Status, bool) {
	switch e {
	case syscall.EPERM:
		return wire.ErrPerm, true
	case syscall.ENOENT:
		return wire.ErrNoEnt, true
	case syscall.EIO:
		return wire.ErrIO, true
	case syscall.ENXIO:
		return wire.ErrNXIO, true
	case syscall.EACCES:
		return wire.ErrAcces, true
	case syscall.EEXIST:
		return wire.ErrExist, true
	case syscall.EXDEV:
		return wire.ErrXDev, true
	case syscall.ENODEV:
		return wire.ErrNoDev, true
	case syscall.ENOTDIR:
		return wire.ErrNotDir, true
	case syscall.EISDIR:
		return wire.ErrIsDir, true
	case syscall.EINVAL:
		return wire.ErrInval, true
	case syscall.EFBIG:
		return wire.ErrFBig, true
	case syscall.ENOSPC:
		return wire.ErrNoSpc, true
	case syscall.EROFS:
		return wire.ErrROFS, true
	case syscall.EMLINK:
		return wire.ErrMLink, true
	case syscall.ENAMETOOLONG:
		return wire.ErrNameTooLong, true
	case syscall.ENOTEMPTY:
		return wire.ErrNotEmpty, true
	case syscall.EDQUOT:
		return wire.ErrDQuot, true
	case syscall.ESTALE:
		return wire.ErrStale, true
	case syscall.ENOMEM, syscall.EMFILE, syscall.ENFILE, syscall.EAGAIN:
		// Transient: the client retries later (knfsd's nfserrno).
		return wire.ErrJukebox, true
	case syscall.EOPNOTSUPP:
		return wire.ErrNotSupp, true
	case syscall.ELOOP:
		// knfsd: a symlink where a directory was needed.
		return wire.ErrNotDir, true
	}
	return 0, false
}
