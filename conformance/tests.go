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
	return append([]Test{
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
		t("RPC15", "RPCHugeCred", "rpc auth", "RPC1", "a credential length of 0x7ffffff0 is AUTH_BADCRED or closes the connection; the server survives (RFC 5531 8.2, 9)", testRPCHugeCred),
		t("RPC16", "RPCCred400", "rpc auth", "RPC10", "a credential body over 400 bytes is AUTH_BADCRED, or closes the connection and the server keeps serving (WARN) (RFC 5531 8.2: opaque body<400>)", testRPCCred400),
		t("RPC17", "RPCAuthSysMalformed", "rpc auth", "RPC10", "an AUTH_SYS body that does not decode is AUTH_BADCRED (RFC 5531 appendix A)", testRPCAuthSysMalformed),
		t("RPC18", "RPCAuthNoneBody", "rpc auth", "RPC1", "AUTH_NONE with a non-empty body is AUTH_BADCRED as knfsd (RFC 5531 10.1)", testRPCAuthNoneBody),
		t("RPC19", "RPCUnknownMsgType", "rpc", "RPC1", "a record with msg_type 7 is not answered; the next call is (RFC 5531 9)", testRPCUnknownMsgType),
		t("RPC20", "RPCZeroFragment", "rpc", "RPC1", "an empty non-last record fragment before a call is accepted (RFC 5531 11)", testRPCZeroFragment),
		t("RPC21", "RPCHugeRecord", "rpc", "RPC1", "a 2 GiB record header closes the connection, the server keeps serving (RFC 5531 11)", testRPCHugeRecord),

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

		// RPC-over-RDMA version 1, RFC 8166 (and RFC 8797 private data).
		t("RDMA1", "RDMANull", "rdma", "", "NULL as RDMA_MSG: RDMA_MSG reply, same XID, vers 1, credits >= 1, empty lists (RFC 8166 4.2.4, 3.3.1)", testRDMANull),
		t("RDMA2", "RDMAPrivateData", "rdma verbs", "", "the CM REP carries magic 0xf6ab0e18, version 1, sizes; no Send over our receive size (RFC 8797 4, RFC 8166 3.3.2)", testRDMAPrivateData),
		t("RDMA3", "RDMANoPrivateData", "rdma verbs", "RDMA1", "without CM private data the server assumes 1024-byte inline: a 2 KB READLINK reply is ERR_CHUNK (RFC 8166 3.3.3, 4.5)", testRDMANoPrivateData),
		t("RDMA4", "RDMAErrVers", "rdma", "RDMA1", "rdma_vers 2 is RDMA_ERROR ERR_VERS with low = high = 1 (RFC 8166 4.5)", testRDMAErrVers),
		t("RDMA5", "RDMAErrMsgP", "rdma", "RDMA1", "RDMA_MSGP is RDMA_ERROR ERR_CHUNK (RFC 8166 4.2.4, 4.5)", testRDMAErrChunk("msgp")),
		t("RDMA6", "RDMAErrProc", "rdma", "RDMA1", "an unknown rdma_proc is RDMA_ERROR ERR_CHUNK (RFC 8166 4.2.4, 4.5)", testRDMAErrChunk("proc")),
		t("RDMA7", "RDMAErrReadDiscrim", "rdma", "RDMA1", "a Read list entry word other than 0/1 is ERR_CHUNK (RFC 8166 4.2.2.1, 4.5)", testRDMAErrChunk("discrim")),
		t("RDMA8", "RDMAErrWriteDiscrim", "rdma", "RDMA1", "a Write list entry word other than 0/1 is ERR_CHUNK (RFC 8166 4.2.2.2, 4.5)", testRDMAErrChunk("wdiscrim")),
		t("RDMA9", "RDMAErrSegCount", "rdma", "RDMA1", "a Write chunk segment count larger than the message is ERR_CHUNK (RFC 8166 4.2.2.2, 4.5)", testRDMAErrChunk("segcount")),
		t("RDMA10", "RDMAErrReplyCount", "rdma", "RDMA1", "a Reply chunk segment count larger than the message is ERR_CHUNK (RFC 8166 4.2.2.2, 4.5)", testRDMAErrChunk("replycount")),
		t("RDMA11", "RDMAErrTruncated", "rdma", "RDMA1", "a header ending after the fixed words is ERR_CHUNK (RFC 8166 4.2.4, 4.5)", testRDMAErrChunk("truncated")),
		t("RDMA12", "RDMAErrUnaligned", "rdma", "RDMA1", "a Read chunk position not 4-aligned is ERR_CHUNK (RFC 8166 3.4.5, 4.5)", testRDMAErrChunk("unaligned")),
		t("RDMA13", "RDMAErrPastEnd", "rdma", "RDMA1", "a Read chunk position past the inline message is ERR_CHUNK (RFC 8166 3.4.5, 4.5)", testRDMAErrChunk("pastend")),
		t("RDMA14", "RDMAErrPosZeroMsg", "rdma", "RDMA1", "a position-zero Read chunk in RDMA_MSG is ERR_CHUNK (RFC 8166 3.5.3, 4.5)", testRDMAErrChunk("poszero")),
		t("RDMA15", "RDMAErrNoMsgBare", "rdma", "RDMA1", "RDMA_NOMSG without a position-zero Read chunk is ERR_CHUNK (RFC 8166 3.5.3, 4.5)", testRDMAErrChunk("nomsgbare")),
		t("RDMA16", "RDMAErrOrder", "rdma", "RDMA1", "Read chunks out of position order are ERR_CHUNK (RFC 8166 3.4.5, 4.5)", testRDMAErrChunk("order")),
		t("RDMA17", "RDMACredits", "rdma", "RDMA1", "every reply, RDMA_ERROR included, grants credits >= 1 (RFC 8166 3.3.1)", testRDMACredits),
		t("RDMA18", "RDMADone", "rdma", "RDMA1", "RDMA_DONE gets no reply and the connection stays usable (RFC 8166 4.2.4)", testRDMADone),
		t("RDMA19", "RDMANoReplyChunk", "rdma", "RDMA1", "a READLINK reply larger than inline with no chunk is ERR_CHUNK; a large READDIR is ERR_CHUNK or shortened, never an oversized Send (RFC 8166 3.3.2, 3.5.3, 4.5)", testRDMANoReplyChunk),
		t("RDMA20", "RDMASmallInline", "rdma", "RDMA1", "a client receiving 1024 bytes inline gets ERR_CHUNK for a 2 KB READLINK, never a Send over 1024 bytes (RFC 8166 3.3.2, 3.3.3)", testRDMASmallInline),
		t("RDMA21", "RDMAReplyChunk", "rdma", "RDMA1", "a large READDIR with a two-segment Reply chunk: RDMA_NOMSG, empty lists, used lengths echoed (RFC 8166 3.4.6, 3.5.3)", testRDMAReplyChunk),
		t("RDMA22", "RDMAReplyChunkUnused", "rdma", "RDMA1", "a reply that fits inline while a Reply chunk is offered is RDMA_MSG with empty lists (RFC 8166 3.5.3)", testRDMAReplyChunkUnused),
		t("RDMA23", "RDMAReadChunk3", "rdma read", "RDMA1", "READ of 10000 bytes into a 3-segment Write chunk: echo 4000/4000/2000, length word kept inline (RFC 8166 3.4.6, RFC 8267 4)", testRDMAReadChunk3),
		t("RDMA24", "RDMAReadShort", "rdma read", "RDMA1", "an EOF-short and an empty READ echo the Write chunk with the bytes written (RFC 8166 3.4.6)", testRDMAReadShort),
		t("RDMA25", "RDMAReadError", "rdma read", "RDMA1", "an error READ echoes the Write chunk with zero lengths (RFC 8166 3.4.6)", testRDMAReadError),
		t("RDMA26", "RDMAReadChunkSmall", "rdma read", "RDMA1", "a Write chunk smaller than the READ data is ERR_CHUNK, nothing written past it (RFC 8166 3.4.6, 4.5)", testRDMAReadChunkSmall),
		t("RDMA27", "RDMAWriteReadChunk", "rdma write", "RDMA1", "WRITE of 5001 bytes through a Read chunk at the data's position, pad omitted (RFC 8166 3.4.5, RFC 8267 4)", testRDMAWriteChunk),
		t("RDMA28", "RDMAWriteSplit", "rdma write", "RDMA27", "WRITE through a Read chunk of three segments sharing one position (RFC 8166 3.4.5)", testRDMAWriteSplit),
		t("RDMA29", "RDMANoMsgCall", "rdma symlink", "RDMA1", "SYMLINK with a 4000-byte target as RDMA_NOMSG with a position-zero Read chunk (RFC 8166 3.5.3, RFC 8267 4)", testRDMANoMsgCall),

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
		t("RMD5", "RmdirDot", "nfs dir remove", "", "RMDIR of . or .. is NFS3ERR_INVAL or NFS3ERR_ACCES, or EXIST for .. (RFC 1813 3.3.13)", testRmdirDot),

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
		// Attribute and wcc_data consistency, RFC 1813 2.6.
		t("WCC1", "WccWrite", "nfs wcc write", "WR2", "WRITE pre-op attributes match GETATTR before it; mtime and ctime advance (RFC 1813 2.6, 3.3.7)", testWccWrite),
		t("WCC2", "WccSetattrMode", "nfs wcc attr", "SATT1", "SETATTR mode advances ctime, not mtime (RFC 1813 2.6, 3.3.2)", testWccSetattrMode),
		t("WCC3", "WccCreateDir", "nfs wcc create", "CR2", "CREATE advances the directory's mtime in dir_wcc; new file attributes (RFC 1813 3.3.8)", testWccCreateDir),
		t("WCC4", "WccRemoveDir", "nfs wcc remove", "RM1", "REMOVE advances the directory's mtime in dir_wcc (RFC 1813 3.3.12)", testWccRemoveDir),
		t("WCC5", "WccRename", "nfs wcc rename", "RNM1", "RENAME advances both directories' mtimes (RFC 1813 3.3.14)", testWccRename),
		t("WCC6", "MkdirNlink", "nfs wcc dir", "MKD1", "a new directory has nlink 2, one more per subdirectory (RFC 1813 2.6, 3.3.9)", testMkdirNlink),
		t("GATTR5", "GetattrUnique", "nfs attr", "CR2", "fileids are unique and the fsid is shared within a directory (RFC 1813 2.6)", testGetattrUnique),
		t("SATT7", "SetattrOwner", "nfs attr", "SATT1", "SETATTR uid/gid: to one's own always, to others as root only (RFC 1813 3.3.2)", testSetattrOwner),
		t("SATT8", "SetattrServerTime", "nfs attr", "SATT3", "SET_TO_SERVER_TIME sets atime and mtime to now; pre-op mtime is the old one (RFC 1813 3.3.2)", testSetattrServerTime),
		t("SATT9", "SetattrGuardOK", "nfs attr", "SATT4", "SETATTR with the current ctime as guard succeeds (RFC 1813 3.3.2)", testSetattrGuardOK),
		t("SATT10", "SetattrNothing", "nfs attr", "SATT1", "SETATTR setting nothing succeeds and changes nothing (RFC 1813 3.3.2)", testSetattrNothing),
		t("SATT11", "SetattrExtend", "nfs attr write", "SATT2", "SETATTR size beyond the end reads back as zeros (RFC 1813 3.3.2)", testSetattrExtend),
		t("SATT12", "SetattrBadHandle", "nfs attr", "", "SETATTR of a malformed handle is NFS3ERR_BADHANDLE (RFC 1813 3.3.2)", testSetattrBadHandle),
		t("LOOK8", "LookupAttrs", "nfs lookup", "LOOK1", "LOOKUP obj_attributes match GETATTR; dir_attributes present (RFC 1813 3.3.3)", testLookupAttrs),
		t("ACC4", "AccessBadHandle", "nfs attr", "", "ACCESS of a malformed handle is NFS3ERR_BADHANDLE (RFC 1813 3.3.4)", testAccessBadHandle),

		// READ, WRITE, COMMIT edge cases.
		t("RD7", "ReadFarPastEOF", "nfs read", "RD1", "READ at offset 2^40 of a small file returns 0 bytes and eof (RFC 1813 3.3.6)", testReadFarPastEOF),
		t("WR7", "WriteZero", "nfs write", "WR1", "WRITE of 0 bytes succeeds with count 0 and leaves the size (RFC 1813 3.3.7)", testWriteZero),
		t("WR8", "WriteHugeOffset", "nfs write read", "WR1", "WRITE at offset 2^40 makes a sparse file of that size, or NFS3ERR_FBIG (RFC 1813 3.3.7)", testWriteHuge),
		t("WR9", "WriteDataSync", "nfs write", "WR1", "WRITE DATA_SYNC is committed at least DATA_SYNC; strict: FILE_SYNC (RFC 1813 3.3.7)", testWriteDataSync),
		t("WR11", "WriteUnstable", "nfs write", "WR1", "WRITE UNSTABLE is committed UNSTABLE or more; strict: UNSTABLE (RFC 1813 3.3.7)", testWriteUnstable),
		t("WR10", "WriteBadHandle", "nfs write", "", "WRITE to a malformed handle is NFS3ERR_BADHANDLE (RFC 1813 3.3.7)", testWriteBadHandle),
		t("CMT5", "CommitVerfShared", "nfs commit write", "CMT1", "one write verifier across files, stabilities and COMMIT count 0 (RFC 1813 3.3.7, 3.3.21)", testWriteVerfStable),
		t("CMT6", "CommitBadHandle", "nfs commit", "", "COMMIT of a malformed handle is NFS3ERR_BADHANDLE (RFC 1813 3.3.21)", testCommitBadHandle),

		// Namespace procedures.
		t("CR8", "CreateUncheckedKeeps", "nfs create", "CR1", "CREATE UNCHECKED of an existing file without a size keeps its data (RFC 1813 3.3.8)", testCreateUncheckedKeeps),
		t("CR9", "CreateExclusiveAttrs", "nfs create", "CR3", "after EXCLUSIVE CREATE, SETATTR sets mode and times; size 0 (RFC 1813 3.3.8)", testCreateExclusiveAttrs),
		t("CR10", "CreateBadHandle", "nfs create", "", "CREATE in a malformed handle is NFS3ERR_BADHANDLE (RFC 1813 3.3.8)", testCreateBadHandle),
		t("MKD5", "MkdirAttrs", "nfs dir create", "MKD1", "MKDIR returns type NF3DIR with the mode asked and dir_wcc (RFC 1813 3.3.9)", testMkdirAttrs),
		t("MKD6", "MkdirDots", "nfs dir create", "MKD1", "MKDIR of . or .. is refused, NFS3ERR_EXIST as knfsd (RFC 1813 3.3.9)", testMkdirDot),
		t("MKD7", "MkdirStale", "nfs dir create stale", "RMD1", "MKDIR in a removed directory is NFS3ERR_STALE (RFC 1813 3.3.9)", testMkdirStale),
		t("SLNK2", "SymlinkLong", "nfs symlink", "RDLK1", "a 1020-byte symlink target round-trips; size is its length (RFC 1813 3.3.10, 3.3.5)", testSymlinkLong),
		t("SLNK3", "SymlinkNameTooLong", "nfs symlink", "", "SYMLINK of a 256-byte name is NFS3ERR_NAMETOOLONG (RFC 1813 3.3.10)", testSymlinkNameTooLong),
		t("SLNK4", "SymlinkStale", "nfs symlink stale", "RMD1", "SYMLINK in a removed directory is NFS3ERR_STALE (RFC 1813 3.3.10)", testSymlinkStale),
		t("RDLK3", "ReadlinkStale", "nfs symlink stale", "RDLK1", "READLINK of a removed symlink is NFS3ERR_STALE (RFC 1813 3.3.5)", testReadlinkStale),
		t("RDLK4", "ReadlinkBadHandle", "nfs symlink", "", "READLINK of a malformed handle is NFS3ERR_BADHANDLE (RFC 1813 3.3.5)", testReadlinkBadHandle),
		t("MKN4", "MknodSock", "nfs create", "MKN1", "MKNOD NF3SOCK makes a socket (RFC 1813 3.3.11)", testMknodSock),
		t("MKN5", "MknodDevice", "nfs create", "MKN1", "MKNOD NF3CHR/NF3BLK with rdev 1:7 (root), PERM/ACCES otherwise (RFC 1813 3.3.11)", testMknodDevice),
		t("MKN6", "MknodNameTooLong", "nfs create", "", "MKNOD of a 256-byte name is NFS3ERR_NAMETOOLONG (RFC 1813 3.3.11)", testMknodNameTooLong),
		t("MKN7", "MknodStale", "nfs create stale", "RMD1", "MKNOD in a removed directory is NFS3ERR_STALE (RFC 1813 3.3.11)", testMknodStale),
		t("RM5", "RemoveNameTooLong", "nfs remove", "", "REMOVE of a 256-byte name is NFS3ERR_NAMETOOLONG (RFC 1813 3.3.12)", testRemoveNameTooLong),
		t("RM6", "RemoveStale", "nfs remove stale", "RMD1", "REMOVE in a removed directory is NFS3ERR_STALE (RFC 1813 3.3.12)", testRemoveStale),
		t("RM7", "RemoveOneOfTwo", "nfs remove link", "LINK1", "REMOVE of one of two names: nlink 1, data still readable (RFC 1813 3.3.12)", testRemoveOpenFile),
		t("RM8", "RemoveTwice", "nfs remove", "RM1", "a second REMOVE of a name is NFS3ERR_NOENT with dir_wcc (RFC 1813 3.3.12)", testRemoveTwice),
		t("RMD6", "RmdirNameTooLong", "nfs dir remove", "", "RMDIR of a 256-byte name is NFS3ERR_NAMETOOLONG (RFC 1813 3.3.13)", testRmdirNameTooLong),
		t("RMD7", "RmdirStale", "nfs dir remove stale", "RMD1", "RMDIR in a removed directory is NFS3ERR_STALE (RFC 1813 3.3.13)", testRmdirStale),
		t("RNM8", "RenameDirOverEmpty", "nfs rename", "RNM1", "RENAME of a directory over an empty directory replaces it (RFC 1813 3.3.14)", testRenameDirOverEmpty),
		t("RNM9", "RenameIntoSubdir", "nfs rename", "RNM1", "RENAME of a directory into its own subdirectory is NFS3ERR_INVAL (RFC 1813 3.3.14)", testRenameIntoSubdir),
		t("RNM10", "RenameNameTooLong", "nfs rename", "RNM1", "RENAME to a 256-byte name is NFS3ERR_NAMETOOLONG (RFC 1813 3.3.14)", testRenameNameTooLong),
		t("RNM11", "RenameStale", "nfs rename stale", "RNM1 RMD1", "RENAME into a removed directory is NFS3ERR_STALE (RFC 1813 3.3.14)", testRenameStale),
		t("RNM12", "RenameDots", "nfs rename", "RNM1", "RENAME of . or .. is refused (RFC 1813 3.3.14)", testRenameDots),
		t("LINK4", "LinkCount", "nfs link", "LINK1", "each LINK raises nlink, same fileid, linkdir_wcc advances (RFC 1813 3.3.15)", testLinkCount),
		t("LINK5", "LinkNameTooLong", "nfs link", "LINK1", "LINK to a 256-byte name is NFS3ERR_NAMETOOLONG (RFC 1813 3.3.15)", testLinkNameTooLong),
		t("LINK6", "LinkStale", "nfs link stale", "LINK1 RMD1", "LINK into a removed directory or of a removed file is NFS3ERR_STALE (RFC 1813 3.3.15)", testLinkStale),
		t("LINK7", "LinkNotDir", "nfs link", "LINK1", "LINK into a regular file is NFS3ERR_NOTDIR (RFC 1813 3.3.15)", testLinkNotDir),

		// Directory listings.
		t("RDIR7", "ReaddirCreates", "nfs readdir dir", "RDIR2", "a paged READDIR with creates between pages loses no earlier name; a repeat is a WARN (RFC 1813 3.3.16)", testReaddirCreates),
		t("RDIR8", "ReaddirStaleVerf", "nfs readdir dir", "RDIR2", "a stale cookie verifier is accepted (knfsd) or NFS3ERR_BAD_COOKIE (gonfsrdma); RFC 1813 3.3.16 allows either", testReaddirStaleVerf),
		t("RDIR9", "ReaddirFileIDs", "nfs readdir", "RDIR1", "READDIR fileids match GETATTR (RFC 1813 3.3.16)", testReaddirFileIDs),
		t("RDIR10", "ReaddirBadHandle", "nfs readdir", "", "READDIR of a malformed handle is NFS3ERR_BADHANDLE (RFC 1813 3.3.16)", testReaddirBadHandle),
		t("RDP5", "ReaddirplusStale", "nfs readdir stale", "RMD1", "READDIRPLUS of a removed directory is NFS3ERR_STALE (RFC 1813 3.3.17)", testReaddirplusStale),
		t("RDP6", "ReaddirplusSmallDircount", "nfs readdir", "RDP1", "READDIRPLUS with dircount 64 pages through every name (RFC 1813 3.3.17)", testReaddirplusSmallDircount),

		// File system information.
		t("FSIN2", "FsinfoSane", "nfs fs", "FSIN1", "FSINFO rtmax >= rtpref, wtmax >= wtpref, multiples, maxfilesize, time_delta <= 1 s (RFC 1813 3.3.19)", testFsinfoSane),
		t("FSIN3", "FsinfoFile", "nfs fs", "FSIN1", "FSINFO and FSSTAT take any handle of the file system, a file's too (RFC 1813 3.3.18, 3.3.19)", testFsinfoFile),
		t("FSIN4", "FsinfoStale", "nfs fs stale", "RM1", "FSINFO of a removed file is NFS3ERR_STALE (RFC 1813 3.3.19)", testFsinfoStale),
		t("FSST3", "FsstatBadHandle", "nfs fs", "", "FSSTAT of a malformed handle is NFS3ERR_BADHANDLE (RFC 1813 3.3.18)", testFsstatBadHandle),
		t("PATH2", "PathconfValues", "nfs fs", "PATH1", "PATHCONF no_trunc, case preserving and sensitive; name_max kept: a name_max name is created, one byte more is NAMETOOLONG (RFC 1813 3.3.20)", testPathconfValues),
		t("PATH3", "PathconfStale", "nfs fs stale", "RM1", "PATHCONF of a removed file is NFS3ERR_STALE (RFC 1813 3.3.20)", testPathconfStale),

		// A read-only export (--roexport): NFS3ERR_ROFS, RFC 1813 2.6.
		t("ROFS1", "ROFSCreate", "nfs rofs create", "", "CREATE on a read-only export is NFS3ERR_ROFS (RFC 1813 3.3.8)", testROFSCreate),
		t("ROFS2", "ROFSMkdir", "nfs rofs dir", "", "MKDIR on a read-only export is NFS3ERR_ROFS (RFC 1813 3.3.9)", testROFSMkdir),
		t("ROFS3", "ROFSSymlink", "nfs rofs symlink", "", "SYMLINK on a read-only export is NFS3ERR_ROFS (RFC 1813 3.3.10)", testROFSSymlink),
		t("ROFS4", "ROFSMknod", "nfs rofs create", "", "MKNOD on a read-only export is NFS3ERR_ROFS (RFC 1813 3.3.11)", testROFSMknod),
		t("ROFS5", "ROFSRemove", "nfs rofs remove", "", "REMOVE on a read-only export is NFS3ERR_ROFS (RFC 1813 3.3.12)", testROFSRemove),
		t("ROFS6", "ROFSRmdir", "nfs rofs remove", "", "RMDIR on a read-only export is NFS3ERR_ROFS (RFC 1813 3.3.13)", testROFSRmdir),
		t("ROFS7", "ROFSRename", "nfs rofs rename", "", "RENAME on a read-only export is NFS3ERR_ROFS (RFC 1813 3.3.14)", testROFSRename),
		t("ROFS8", "ROFSLink", "nfs rofs link", "", "LINK on a read-only export is NFS3ERR_ROFS (RFC 1813 3.3.15)", testROFSLink),
		t("ROFS9", "ROFSWrite", "nfs rofs write", "", "WRITE on a read-only export is NFS3ERR_ROFS (RFC 1813 3.3.7)", testROFSWrite),
		t("ROFS10", "ROFSSetattr", "nfs rofs attr", "", "SETATTR mode and size on a read-only export are NFS3ERR_ROFS (RFC 1813 3.3.2)", testROFSSetattr),
		t("ROFS11", "ROFSReadAccess", "nfs rofs read", "", "READ works on a read-only export; ACCESS grants no MODIFY or EXTEND (RFC 1813 3.3.4, 3.3.6)", testROFSRead),
		t("XDEV1", "XDevRenameLink", "nfs rofs rename link", "", "RENAME and LINK across exports are NFS3ERR_XDEV (or ROFS first, as knfsd) (RFC 1813 3.3.14, 3.3.15)", testXDevRename),
	}, lockTests()...)
}

// lockTests are the lock manager and status monitor tests; the grace
// tests come last, since each SM_SIMU_CRASH drops every lock.
func lockTests() []Test {
	out := nlmTests()
	var grace []Test
	for _, tc := range nsmTests() {
		if hasFlag(&tc, "grace") {
			grace = append(grace, tc)
		} else {
			out = append(out, tc)
		}
	}
	return append(out, grace...)
}
