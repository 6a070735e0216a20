// Package vfs is the backing-store layer under the NFS server: one FS per
// export, addressed by stable handles, implemented over go-billy
// filesystems with small optional interfaces for what billy lacks (hard
// links, mknod, statfs, node identity, ownership).
package vfs
