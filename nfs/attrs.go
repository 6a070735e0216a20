package nfs

import (
	"time"

	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/vfs"
)

// toTime converts to nfstime3; times before 1970 become 0 and times after
// 2106 saturate.
func toTime(t time.Time) wire.Time {
	sec := t.Unix()
	switch {
	case sec < 0:
		return wire.Time{}
	case sec > 0xffffffff:
		return wire.Time{Sec: 0xffffffff, Nsec: 999999999}
	}
	return wire.Time{Sec: uint32(sec), Nsec: uint32(t.Nanosecond())}
}

func fromTime(t wire.Time) time.Time { return time.Unix(int64(t.Sec), int64(t.Nsec)) }

// toFattr converts backend attributes to fattr3 (RFC 1813 section 2.6).
func toFattr(fsid uint32, a *vfs.Attr, out *wire.Fattr) {
	*out = wire.Fattr{
		Type:   wire.FileType(a.Type),
		Mode:   a.Mode & 07777,
		Nlink:  a.Nlink,
		UID:    a.UID,
		GID:    a.GID,
		Size:   a.Size,
		Used:   a.Used,
		Rdev:   wire.Specdata{Major: a.Major, Minor: a.Minor},
		FSID:   uint64(fsid),
		FileID: a.FileID,
		Atime:  toTime(a.Atime),
		Mtime:  toTime(a.Mtime),
		Ctime:  toTime(a.Ctime),
	}
}

// postOp returns post_op_attr for h, empty when GetAttr fails.
func (rq *req) postOp(h vfs.Handle) wire.PostOpAttr {
	var p wire.PostOpAttr
	if a, err := rq.fs.GetAttr(h); err == nil {
		p.Set = true
		toFattr(rq.ex.FSID, &a, &p.Attr)
	}
	return p
}

// attrOp returns post_op_attr from attributes already fetched.
func (rq *req) attrOp(a *vfs.Attr) wire.PostOpAttr {
	p := wire.PostOpAttr{Set: true}
	toFattr(rq.ex.FSID, a, &p.Attr)
	return p
}

// preOp returns pre_op_attr from attributes fetched before a change.
func preOp(a *vfs.Attr) wire.PreOpAttr {
	return wire.PreOpAttr{Set: true, Attr: wire.WccAttr{Size: a.Size, Mtime: toTime(a.Mtime), Ctime: toTime(a.Ctime)}}
}

// wcc returns wcc_data for h: before from pre (nil: not captured), after
// fetched now.
func (rq *req) wcc(h vfs.Handle, pre *vfs.Attr) wire.WccData {
	var w wire.WccData
	if pre != nil {
		w.Before = preOp(pre)
	}
	w.After = rq.postOp(h)
	return w
}

// toSetAttr converts sattr3 to the backend's form: SET_TO_SERVER_TIME
// becomes AtimeNow / MtimeNow (with now as the value for backends that
// read it). A uid or gid of 0xffffffff is passed on for the backend to
// refuse (EPERM for a non-root caller, EINVAL for root): to chown(2) -1
// would mean "unchanged".
func toSetAttr(s *wire.Sattr, now time.Time) vfs.SetAttr {
	var v vfs.SetAttr
	if s.Mode.Set {
		m := s.Mode.V & 07777
		v.Mode = &m
	}
	if s.UID.Set {
		u := s.UID.V
		v.UID = &u
	}
	if s.GID.Set {
		g := s.GID.V
		v.GID = &g
	}
	if s.Size.Set {
		z := s.Size.V
		v.Size = &z
	}
	v.Atime = setTime(s.Atime, now)
	v.Mtime = setTime(s.Mtime, now)
	v.AtimeNow = s.Atime.How == wire.SetToServerTime
	v.MtimeNow = s.Mtime.How == wire.SetToServerTime
	return v
}

func setTime(t wire.SetTime, now time.Time) *time.Time {
	switch t.How {
	case wire.SetToServerTime:
		return &now
	case wire.SetToClientTime:
		v := fromTime(t.Time)
		return &v
	}
	return nil
}

func isEmptySetAttr(v *vfs.SetAttr) bool {
	return v.Mode == nil && v.UID == nil && v.GID == nil && v.Size == nil && v.Atime == nil && v.Mtime == nil && !v.AtimeNow && !v.MtimeNow
}
