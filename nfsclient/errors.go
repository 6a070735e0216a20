package nfsclient

import (
	"errors"
	"io/fs"
	"syscall"

	"github.com/gonfsrdma/gonfsrdma/nfs/client"
	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
)

// StatusError is an NFS reply whose nfsstat3 (RFC 1813 section 2.6) is
// not NFS3_OK. Operations return it inside an *fs.PathError. It matches
// the io/fs sentinels with errors.Is: NFS3ERR_NOENT and NFS3ERR_STALE are
// fs.ErrNotExist, NFS3ERR_PERM, NFS3ERR_ACCES and NFS3ERR_ROFS are
// fs.ErrPermission, NFS3ERR_EXIST and NFS3ERR_NOTEMPTY are fs.ErrExist.
// errors.As also finds the *client.StatusError it wraps.
type StatusError struct {
	Status wire.Status
	err    *client.StatusError
}

func (e *StatusError) Error() string { return e.err.Error() }

// Unwrap returns the nfs/client error.
func (e *StatusError) Unwrap() error { return e.err }

// Is implements the io/fs mapping above.
func (e *StatusError) Is(target error) bool {
	switch target {
	case fs.ErrNotExist:
		return e.Status == wire.ErrNoEnt || e.Status == wire.ErrStale
	case fs.ErrPermission:
		return e.Status == wire.ErrPerm || e.Status == wire.ErrAcces || e.Status == wire.ErrROFS
	case fs.ErrExist:
		return e.Status == wire.ErrExist || e.Status == wire.ErrNotEmpty
	}
	if t, ok := target.(*StatusError); ok {
		return t.Status == e.Status
	}
	return false
}

// Errno is the errno the status stands for (the NFSv3 values of the
// Unix statuses are errno values; the NFSv3-only ones map to the nearest
// errno), for exit codes and syscall-style callers.
func (e *StatusError) Errno() syscall.Errno {
	switch e.Status {
	case wire.ErrBadHandle, wire.ErrStale:
		return syscall.ESTALE
	case wire.ErrNotSupp:
		return syscall.ENOTSUP
	case wire.ErrTooSmall, wire.ErrBadCookie:
		return syscall.EINVAL
	case wire.ErrServerFault, wire.ErrBadType, wire.ErrNotSync:
		return syscall.EIO
	case wire.ErrJukebox:
		return syscall.EAGAIN
	}
	if e.Status > 0 && e.Status < 10000 {
		return syscall.Errno(e.Status)
	}
	return syscall.EIO
}

// pathErr wraps err for op on name, turning nfs/client status errors into
// *StatusError.
func pathErr(op, name string, err error) error {
	if err == nil {
		return nil
	}
	var se *client.StatusError
	if errors.As(err, &se) {
		err = &StatusError{Status: se.Status, err: se}
	}
	return &fs.PathError{Op: op, Path: name, Err: err}
}

// statusErr builds a *StatusError for a status found without a reply
// error (a check done by this package).
func statusErr(proc uint32, st wire.Status) *StatusError {
	return &StatusError{Status: st, err: &client.StatusError{Proc: proc, Status: st}}
}
