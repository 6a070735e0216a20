package conformance

import "strings"

// t builds a table entry; flags and deps are space-separated, and every
// test carries the flag "all".
func t(code, name, flags, deps, doc string, run func(*Env) error) Test {
	return Test{Code: code, Name: name, Flags: append([]string{"all"}, strings.Fields(flags)...),
		Deps: strings.Fields(deps), Doc: doc, Run: run}
}

// Tests returns the static table of every test, in run order (a test's
// dependencies come before it).
func Tests() []Test {
	return []Test{
		// ONC RPC, RFC 5531.
		t("RPC1", "RPCNull", "rpc", "", "NULL with AUTH_NONE is answered SUCCESS with an AUTH_NONE verifier (RFC 5531 9, RFC 1813 3.3.0)", testRPCNull),
		t("RPC2", "RPCVersion", "rpc", "RPC1", "rpcvers 3 is MSG_DENIED RPC_MISMATCH with a range holding 2 (RFC 5531 9)", testRPCVersion),
		t("RPC3", "RPCProgUnavail", "rpc", "RPC1", "an unknown program is PROG_UNAVAIL (RFC 5531 9)", testRPCProgUnavail),
		t("RPC4", "RPCProgMismatch", "rpc", "RPC1", "an unsupported NFS version is PROG_MISMATCH with a range holding 3 (RFC 5531 9)", testRPCProgMismatch),
		t("RPC5", "RPCProcUnavail", "rpc", "RPC1", "NFSv3 procedure 22 is PROC_UNAVAIL (RFC 5531 9)", testRPCProcUnavail),
		t("RPC6", "RPCGarbageArgs", "rpc", "RPC1", "undecodable arguments (short or 65-byte nfs_fh3) are GARBAGE_ARGS (RFC 5531 9, RFC 1813 2.5)", testRPCGarbage),
		t("RPC10", "RPCAuthSys", "rpc auth", "RPC1", "GETATTR with AUTH_SYS succeeds (RFC 5531 appendix A)", testRPCAuthSysGetattr),
		t("RPC7", "RPCAuthSys17GIDs", "rpc auth", "RPC10", "AUTH_SYS with 17 gids is AUTH_ERROR AUTH_BADCRED (RFC 5531 appendix A: gids<16>)", testRPCTooManyGIDs),
		t("RPC8", "RPCAuthSysLongMachine", "rpc auth", "RPC10", "AUTH_SYS machinename over 255 bytes is AUTH_BADCRED (RFC 5531 appendix A)", testRPCLongMachineName),
		t("RPC9", "RPCUnknownFlavor", "rpc auth", "RPC1", "an unknown credential flavor is AUTH_ERROR (RFC 5531 9, 10)", testRPCUnknownFlavor),
		t("RPC11", "RPCFragments", "rpc", "RPC10", "a call in 4-byte record fragments is reassembled (RFC 5531 11)", testRPCFragments),
		t("RPC12", "RPCPipeline", "rpc", "RPC10", "16 calls written at once on one connection are all answered (RFC 5531 11)", testRPCPipeline),
		t("RPC13", "RPCIgnoreReply", "rpc", "RPC1", "a REPLY message sent to the server is not answered (RFC 5531 9)", testRPCIgnoreReply),
		t("RPC14", "RPCShortHeader", "rpc", "RPC1", "a record too short for a call header does not take the server down (RFC 5531 9)", testRPCShortHeader),

		// rpcbind, RFC 1833.
		t("PMAP1", "PmapNull", "rpcbind", "", "NULL of portmapper v2 and rpcbind v3/v4 (RFC 1833 2.2, 3.2)", testPmapNull),
		t("PMAP2", "PmapGetPort", "rpcbind", "PMAP1", "PMAPPROC_GETPORT returns the MOUNT and NFS ports (RFC 1833 3.2)", testPmapGetPort),
		t("PMAP3", "PmapGetPortUnknown", "rpcbind", "PMAP1", "PMAPPROC_GETPORT of an unregistered program returns 0 (RFC 1833 3.2)", testPmapGetPortUnknown),
		t("PMAP4", "PmapDump", "rpcbind", "PMAP1", "PMAPPROC_DUMP lists MOUNT v3 over TCP (RFC 1833 3.2)", testPmapDump),
		t("RPCB1", "RpcbGetAddr", "rpcbind", "PMAP1", "RPCBPROC_GETADDR returns MOUNT's universal address, \"\" when unregistered (RFC 1833 2.2)", testRpcbGetAddr),
		t("RPCB2", "RpcbDump", "rpcbind", "PMAP1", "RPCBPROC_DUMP lists NFS v3 and MOUNT v3 over tcp (RFC 1833 2.2)", testRpcbDump),
		t("RPCB3", "RpcbGetTime", "rpcbind", "PMAP1", "RPCBPROC_GETTIME returns the server's time (RFC 1833 2.2)", testRpcbGetTime),

		// MOUNT, RFC 1813 appendix I.
		t("MNT1", "MountNull", "mount", "", "MOUNTPROC3_NULL (RFC 1813 5.2.0)", testMountNull),
		t("MNT2", "MountMnt", "mount", "MNT1", "MNT returns a directory handle and AUTH_SYS among the flavors (RFC 1813 5.2.1)", testMountMnt),
		t("MNT3", "MountNoEnt", "mount", "MNT1", "MNT of a missing path is MNT3ERR_NOENT or MNT3ERR_ACCES (RFC 1813 5.2.1)", testMountNoEnt),
		t("MNT4", "MountLongPath", "mount", "MNT1", "MNT of a dirpath over MNTPATHLEN is GARBAGE_ARGS (RFC 1813 5.1.1)", testMountLongPath),
		t("MNT5", "MountLongName", "mount", "MNT1", "MNT of a component over MNTNAMLEN is MNT3ERR_NAMETOOLONG (RFC 1813 5.1.5)", testMountLongName),
		t("MNT6", "MountDump", "mount", "MNT2", "DUMP lists a mount just made (RFC 1813 5.2.2)", testMountDump),
		t("MNT7", "MountUmnt", "mount", "MNT6", "UMNT removes the mount from DUMP; UMNT of an unknown path is fine (RFC 1813 5.2.3)", testMountUmnt),
		t("MNT8", "MountUmntAll", "mount", "MNT6", "UMNTALL removes all of the client's mounts (RFC 1813 5.2.4)", testMountUmntAll),
		t("MNT9", "MountExport", "mount", "MNT1", "EXPORT lists the export (RFC 1813 5.2.5)", testMountExport),
		t("MNT10", "MountV1", "mount", "MNT1", "MOUNT v1 NULL and EXPORT answer, as showmount(8) needs (RFC 1094 A.5)", testMountV1),
		t("MNT11", "MountVersMismatch", "mount", "MNT1", "MOUNT version 4 is PROG_MISMATCH with a range holding 3 (RFC 5531 9)", testMountVersMismatch),
		t("MNT12", "MountProcUnavail", "mount", "MNT1", "MOUNT v3 procedure 6 is PROC_UNAVAIL (RFC 5531 9)", testMountProcUnavail),
		t("MNT13", "MountUDP", "mount", "MNT1", "MOUNT NULL and MNT over UDP (RFC 1813 5)", testMountUDP),

		// NFSv3, RFC 1813 section 3.3.
		t("NULL1", "Null", "nfs", "", "NFSPROC3_NULL (RFC 1813 3.3.0)", testNull),
		t("GATTR1", "GetattrRoot", "nfs attr", "", "GETATTR of the export root: a directory (RFC 1813 3.3.1)", testGetattrRoot),
		t("CR2", "CreateGuarded", "nfs create", "GATTR1", "CREATE GUARDED of an existing name is NFS3ERR_EXIST (RFC 1813 3.3.8)", testCreateGuarded),
		t("WR1", "WriteRead", "nfs write read", "CR2", "FILE_SYNC WRITE then READ returns the data, count and eof (RFC 1813 3.3.6, 3.3.7)", testWriteRead),
		t("GATTR2", "GetattrFile", "nfs attr", "WR1", "GETATTR of a new file: type, size, mode, nlink, fsid, fileid (RFC 1813 3.3.1, 2.6)", testGetattrFile),
		t("RM1", "Remove", "nfs remove", "CR2", "REMOVE unlinks the name and returns wcc_data (RFC 1813 3.3.12)", testRemove),
		t("MKD1", "Mkdir", "nfs dir create", "GATTR1", "MKDIR makes a directory with the mode asked (RFC 1813 3.3.9)", testMkdir),
		t("RMD1", "Rmdir", "nfs dir remove", "MKD1", "RMDIR removes an empty directory (RFC 1813 3.3.13)", testRmdir),
		t("GATTR3", "GetattrStale", "nfs attr stale", "RM1", "GETATTR of a removed file is NFS3ERR_STALE (RFC 1813 3.3.1)", testGetattrStale),
		t("GATTR4", "GetattrBadHandle", "nfs attr", "", "GETATTR of a malformed handle is NFS3ERR_BADHANDLE (RFC 1813 3.3.1, 2.6)", testGetattrBadHandle),

		t("SATT1", "SetattrMode", "nfs attr", "CR2", "SETATTR of the mode, reflected in wcc and GETATTR (RFC 1813 3.3.2)", testSetattrMode),
		t("SATT2", "SetattrSize", "nfs attr write", "WR1", "SETATTR size truncates and extends; wcc pre/post sizes (RFC 1813 3.3.2)", testSetattrSize),
		t("SATT3", "SetattrTimes", "nfs attr", "CR2", "SETATTR SET_TO_CLIENT_TIME and SET_TO_SERVER_TIME (RFC 1813 3.3.2)", testSetattrTimes),
		t("SATT4", "SetattrGuard", "nfs attr", "SATT1", "SETATTR with a wrong ctime guard is NFS3ERR_NOT_SYNC and changes nothing (RFC 1813 3.3.2)", testSetattrGuard),
		t("SATT5", "SetattrStale", "nfs attr stale", "RM1", "SETATTR of a removed file is NFS3ERR_STALE (RFC 1813 3.3.2)", testSetattrStale),
		t("SATT6", "SetattrDirSize", "nfs attr dir", "", "SETATTR size of a directory is NFS3ERR_ISDIR or NFS3ERR_INVAL (RFC 1813 3.3.2)", testSetattrDirSize),

		t("LOOK1", "Lookup", "nfs lookup", "CR2", "LOOKUP finds a new file by name (RFC 1813 3.3.3)", testLookup),
		t("LOOK2", "LookupDots", "nfs lookup dir", "MKD1", "LOOKUP of . and .. (RFC 1813 3.3.3)", testLookupDot),
		t("LOOK3", "LookupNoEnt", "nfs lookup", "", "LOOKUP of a missing name is NFS3ERR_NOENT with dir_attributes (RFC 1813 3.3.3)", testLookupNoEnt),
		t("LOOK4", "LookupNotDir", "nfs lookup", "CR2", "LOOKUP in a regular file is NFS3ERR_NOTDIR (RFC 1813 3.3.3)", testLookupNotDir),
		t("LOOK5", "LookupNameTooLong", "nfs lookup", "", "LOOKUP of a 256-byte name is NFS3ERR_NAMETOOLONG (RFC 1813 3.3.3)", testLookupNameTooLong),
		t("LOOK6", "LookupStale", "nfs lookup stale", "RMD1", "LOOKUP in a removed directory is NFS3ERR_STALE (RFC 1813 3.3.3)", testLookupStale),
		t("LOOK7", "LookupBadHandle", "nfs lookup", "", "LOOKUP in a malformed handle is NFS3ERR_BADHANDLE (RFC 1813 3.3.3)", testLookupBadHandle),

		t("ACC1", "Access", "nfs attr", "CR2", "ACCESS grants only bits asked, READ to the owner of a 0644 file (RFC 1813 3.3.4)", testAccess),
		t("ACC2", "AccessDir", "nfs attr dir", "", "ACCESS LOOKUP and MODIFY on the owner's 0777 directory (RFC 1813 3.3.4)", testAccessDir),
		t("ACC3", "AccessStale", "nfs attr stale", "RM1", "ACCESS of a removed file is NFS3ERR_STALE (RFC 1813 3.3.4)", testAccessStale),

		t("RDLK1", "SymlinkReadlink", "nfs symlink", "", "SYMLINK then READLINK returns the target, type NF3LNK (RFC 1813 3.3.10, 3.3.5)", testReadlink),
		t("RDLK2", "ReadlinkNotLink", "nfs symlink", "CR2", "READLINK of a regular file is NFS3ERR_INVAL (RFC 1813 3.3.5)", testReadlinkNotLink),
		t("SLNK1", "SymlinkExist", "nfs symlink", "RDLK1", "SYMLINK over an existing name is NFS3ERR_EXIST (RFC 1813 3.3.10)", testSymlinkExist),

		t("WR2", "WriteWcc", "nfs write", "WR1", "WRITE wcc_data has the sizes before and after (RFC 1813 3.3.7)", testWriteWcc),
		t("WR3", "WriteOffset", "nfs write read", "WR1", "WRITE past the end extends the file with a hole of zeros (RFC 1813 3.3.7)", testWriteOffset),
		t("WR4", "WriteDir", "nfs write dir", "", "WRITE to a directory is NFS3ERR_ISDIR (RFC 1813 3.3.7)", testWriteDir),
		t("WR5", "WriteStale", "nfs write stale", "RM1", "WRITE to a removed file is NFS3ERR_STALE (RFC 1813 3.3.7)", testWriteStale),
		t("WR6", "WriteCountMismatch", "nfs write", "CR2", "WRITE whose count differs from the data length is refused (RFC 1813 3.3.7)", testWriteCountMismatch),
		t("RD1", "ReadEOF", "nfs read", "WR1", "READ up to and past the end sets eof; past the end returns 0 bytes (RFC 1813 3.3.6)", testReadEOF),
		t("RD2", "ReadZero", "nfs read", "WR1", "READ of count 0 returns no data (RFC 1813 3.3.6)", testReadZero),
		t("RD3", "ReadLarge", "nfs read write", "WR1", "a file larger than wtpref reads back intact (RFC 1813 3.3.6, 3.3.19)", testReadLarge),
		t("RD4", "ReadDir", "nfs read dir", "", "READ of a directory is NFS3ERR_ISDIR (RFC 1813 3.3.6)", testReadDir),
		t("RD5", "ReadStale", "nfs read stale", "RM1", "READ of a removed file is NFS3ERR_STALE (RFC 1813 3.3.6)", testReadStale),
		t("RD6", "ReadBadHandle", "nfs read", "", "READ of a malformed handle is NFS3ERR_BADHANDLE (RFC 1813 3.3.6)", testReadBadHandle),
		t("CMT1", "CommitVerf", "nfs commit write", "WR1", "UNSTABLE WRITEs and COMMIT share one write verifier; data survives (RFC 1813 3.3.7, 3.3.21)", testWriteVerf),
		t("CMT2", "CommitRange", "nfs commit", "CMT1", "COMMIT of a range returns post-op attributes (RFC 1813 3.3.21)", testCommitRange),
		t("CMT3", "CommitDir", "nfs commit dir", "", "COMMIT of a directory is NFS3ERR_ISDIR or NFS3ERR_INVAL (RFC 1813 3.3.21)", testCommitDir),
		t("CMT4", "CommitStale", "nfs commit stale", "RM1", "COMMIT of a removed file is NFS3ERR_STALE (RFC 1813 3.3.21)", testCommitStale),

		t("CR1", "CreateUnchecked", "nfs create", "WR1", "CREATE UNCHECKED, then again with size 0 truncates (RFC 1813 3.3.8)", testCreateUnchecked),
		t("CR3", "CreateExclusive", "nfs create", "GATTR1", "EXCLUSIVE CREATE replay with the same verifier succeeds; another is EXIST (RFC 1813 3.3.8)", testCreateExclusive),
		t("CR4", "CreateNotDir", "nfs create", "CR2", "CREATE in a regular file is NFS3ERR_NOTDIR (RFC 1813 3.3.8)", testCreateNotDir),
		t("CR5", "CreateNameTooLong", "nfs create", "", "CREATE of a 256-byte name is NFS3ERR_NAMETOOLONG (RFC 1813 3.3.8)", testCreateNameTooLong),
		t("CR6", "CreateDots", "nfs create", "", "CREATE of . or .. is refused (RFC 1813 3.3.8)", testCreateDot),
		t("CR7", "CreateStale", "nfs create stale", "RMD1", "CREATE in a removed directory is NFS3ERR_STALE (RFC 1813 3.3.8)", testCreateStale),
		t("MKD2", "MkdirExist", "nfs dir create", "MKD1", "MKDIR over an existing directory or file is NFS3ERR_EXIST (RFC 1813 3.3.9)", testMkdirExist),
		t("MKD3", "MkdirNameTooLong", "nfs dir create", "", "MKDIR of a 256-byte name is NFS3ERR_NAMETOOLONG (RFC 1813 3.3.9)", testMkdirNameTooLong),
		t("MKD4", "MkdirNotDir", "nfs dir create", "CR2", "MKDIR in a regular file is NFS3ERR_NOTDIR (RFC 1813 3.3.9)", testMkdirNotDir),
		t("MKN1", "MknodFifo", "nfs create", "", "MKNOD NF3FIFO makes a FIFO (RFC 1813 3.3.11)", testMknodFifo),
		t("MKN2", "MknodBadType", "nfs create", "", "MKNOD of NF3REG, NF3DIR or NF3LNK is NFS3ERR_BADTYPE (RFC 1813 3.3.11)", testMknodBadType),
		t("MKN3", "MknodExist", "nfs create", "CR2", "MKNOD over an existing name is NFS3ERR_EXIST (RFC 1813 3.3.11)", testMknodExist),

		t("RM2", "RemoveNoEnt", "nfs remove", "", "REMOVE of a missing name is NFS3ERR_NOENT (RFC 1813 3.3.12)", testRemoveNoEnt),
		t("RM3", "RemoveDir", "nfs remove dir", "MKD1", "REMOVE of a directory is refused, NFS3ERR_ISDIR as knfsd (RFC 1813 3.3.12)", testRemoveDir),
		t("RM4", "RemoveNotDir", "nfs remove", "CR2", "REMOVE in a regular file is NFS3ERR_NOTDIR (RFC 1813 3.3.12)", testRemoveNotDir),
		t("RMD2", "RmdirNotEmpty", "nfs dir remove", "RMD1", "RMDIR of a non-empty directory is NFS3ERR_NOTEMPTY (RFC 1813 3.3.13)", testRmdirNotEmpty),
		t("RMD3", "RmdirNotDir", "nfs dir remove", "CR2", "RMDIR of a regular file is NFS3ERR_NOTDIR (RFC 1813 3.3.13)", testRmdirNotDir),
		t("RMD4", "RmdirNoEnt", "nfs dir remove", "", "RMDIR of a missing name is NFS3ERR_NOENT (RFC 1813 3.3.13)", testRmdirNoEnt),
		t("RMD5", "RmdirDot", "nfs dir remove", "", "RMDIR of . or .. is NFS3ERR_INVAL or NFS3ERR_ACCES (RFC 1813 3.3.13)", testRmdirDot),

		t("RNM1", "Rename", "nfs rename", "MKD1 CR2", "RENAME across directories keeps the file (RFC 1813 3.3.14)", testRename),
		t("RNM2", "RenameOver", "nfs rename", "RNM1 WR1", "RENAME over an existing file replaces it atomically (RFC 1813 3.3.14)", testRenameOver),
		t("RNM3", "RenameNoEnt", "nfs rename", "", "RENAME of a missing name is NFS3ERR_NOENT (RFC 1813 3.3.14)", testRenameNoEnt),
		t("RNM4", "RenameTypeClash", "nfs rename", "RNM1", "RENAME dir over file is NOTDIR, file over dir is ISDIR (RFC 1813 3.3.14)", testRenameDirOverFile),
		t("RNM5", "RenameNotEmpty", "nfs rename", "RNM1", "RENAME over a non-empty directory is NFS3ERR_NOTEMPTY (RFC 1813 3.3.14)", testRenameNotEmpty),
		t("RNM6", "RenameIntoSelf", "nfs rename", "RNM1", "RENAME of a directory into itself is NFS3ERR_INVAL (RFC 1813 3.3.14)", testRenameIntoSelf),
		t("RNM7", "RenameSame", "nfs rename", "RNM1", "RENAME of a name to itself succeeds and changes nothing (RFC 1813 3.3.14)", testRenameSame),

		t("LINK1", "Link", "nfs link", "WR1", "LINK makes a second name, nlink 2 (RFC 1813 3.3.15); NOTSUPP without FSF3_LINK", testLink),
		t("LINK2", "LinkExist", "nfs link", "LINK1", "LINK over an existing name is NFS3ERR_EXIST (RFC 1813 3.3.15)", testLinkExist),
		t("LINK3", "LinkDir", "nfs link dir", "MKD1", "LINK of a directory is refused (RFC 1813 3.3.15)", testLinkDir),

		t("RDIR1", "Readdir", "nfs readdir dir", "CR1", "READDIR lists every name, . and .. (RFC 1813 3.3.16)", testReaddir),
		t("RDIR2", "ReaddirCookies", "nfs readdir dir", "RDIR1", "READDIR in 512-byte pages resumes from cookie and verifier, no name lost or repeated (RFC 1813 3.3.16)", testReaddirCookies),
		t("RDIR3", "ReaddirTooSmall", "nfs readdir dir", "CR1", "READDIR with count 10 is NFS3ERR_TOOSMALL (RFC 1813 3.3.16)", testReaddirTooSmall),
		t("RDIR4", "ReaddirNotDir", "nfs readdir", "CR2", "READDIR of a regular file is NFS3ERR_NOTDIR (RFC 1813 3.3.16)", testReaddirNotDir),
		t("RDIR5", "ReaddirStale", "nfs readdir stale", "RMD1", "READDIR of a removed directory is NFS3ERR_STALE (RFC 1813 3.3.16)", testReaddirStale),
		t("RDIR6", "ReaddirEmpty", "nfs readdir dir", "", "READDIR of an empty directory: only . and .., eof (RFC 1813 3.3.16)", testReaddirEmpty),
		t("RDP1", "Readdirplus", "nfs readdir dir", "CR1", "READDIRPLUS entries carry handles and attributes matching GETATTR (RFC 1813 3.3.17)", testReaddirplus),
		t("RDP2", "ReaddirplusCookies", "nfs readdir dir", "RDP1", "READDIRPLUS in small pages: no name lost or repeated (RFC 1813 3.3.17)", testReaddirplusCookies),
		t("RDP3", "ReaddirplusTooSmall", "nfs readdir dir", "CR1", "READDIRPLUS with maxcount 10 is NFS3ERR_TOOSMALL (RFC 1813 3.3.17)", testReaddirplusTooSmall),
		t("RDP4", "ReaddirplusNotDir", "nfs readdir", "CR2", "READDIRPLUS of a regular file is NFS3ERR_NOTDIR (RFC 1813 3.3.17)", testReaddirplusNotDir),

		t("PERM1", "PermRead", "nfs perm read", "SATT1", "READ of another user's 0600 file is NFS3ERR_ACCES (RFC 1813 3.3.6, 4.4)", testPermRead),
		t("PERM2", "PermWrite", "nfs perm write", "WR1", "WRITE to another user's 0644 file is NFS3ERR_ACCES (RFC 1813 3.3.7, 4.4)", testPermWrite),
		t("PERM3", "PermCreate", "nfs perm create", "MKD1", "CREATE in another user's 0755 directory is NFS3ERR_ACCES (RFC 1813 3.3.8, 4.4)", testPermCreate),
		t("PERM4", "PermAccess", "nfs perm attr", "SATT1", "ACCESS of a 0604 file by another user grants READ only (RFC 1813 3.3.4)", testPermAccess),
		t("PERM5", "PermChmod", "nfs perm attr", "CR2", "SETATTR mode by a user other than the owner is NFS3ERR_PERM (RFC 1813 3.3.2)", testPermChmod),

		t("FSST1", "Fsstat", "nfs fs", "", "FSSTAT counts are consistent (free <= total, avail <= free) (RFC 1813 3.3.18)", testFsstat),
		t("FSST2", "FsstatStale", "nfs fs stale", "RM1", "FSSTAT of a removed file is NFS3ERR_STALE (RFC 1813 3.3.18)", testFsstatStale),
		t("FSIN1", "Fsinfo", "nfs fs", "", "FSINFO sizes non-zero, preferred <= maximum, FSF3_HOMOGENEOUS (RFC 1813 3.3.19)", testFsinfo),
		t("PATH1", "Pathconf", "nfs fs", "", "PATHCONF name_max and link_max non-zero (RFC 1813 3.3.20)", testPathconf),
	}
}
