# Shared by scripts/bench-peers.sh and scripts/conformance-peers.sh: the
# set-up inside the private network namespace, and NFS-Ganesha's install
# and configuration. Source it; it defines functions only.

# peers_inner_setup runs first inside `unshare -n -m`: a private /run,
# loopback up, and an EXIT trap that stops every PID added to pids.
peers_inner_setup() {
	mount -t tmpfs tmpfs /run
	mkdir -p /run/ganesha /run/rpcbind
	ip link set lo up
	pids=()
	trap peers_cleanup_inner EXIT
}

peers_cleanup_inner() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
}

# wait_port PORT PID: wait (up to 30 s) until something listens on
# 127.0.0.1:PORT; fail at once if PID exits.
wait_port() {
	for _ in $(seq 1 300); do
		if ! kill -0 "$2" 2>/dev/null; then return 1; fi
		if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
		sleep 0.1
	done
	return 1
}

# ganesha_install LOG: install nfs-ganesha, its VFS FSAL and rpcbind with
# apt-get unless present. On failure it prints why and returns 1.
ganesha_install() {
	if command -v ganesha.nfsd >/dev/null && ls /usr/lib/*/ganesha/libfsalvfs.so >/dev/null 2>&1 &&
		command -v rpcbind >/dev/null; then
		return 0
	fi
	echo "installing nfs-ganesha, nfs-ganesha-vfs, rpcbind" >&2
	if ! (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nfs-ganesha nfs-ganesha-vfs rpcbind) >"$1" 2>&1; then
		echo "apt-get install nfs-ganesha nfs-ganesha-vfs rpcbind failed: $(tail -1 "$1")"
		return 1
	fi
}

# ganesha_core NFS_PORT MOUNT_PORT: the configuration's common part:
# NFSv3 (and its MOUNT) only, no NLM/RQUOTA, no grace period.
ganesha_core() {
	cat <<GANESHA
NFS_CORE_PARAM {
	Protocols = 3;
	NFS_Port = $1;
	MNT_Port = $2;
	Enable_NLM = false;
	Enable_RQUOTA = false;
}
NFSV4 { Graceless = true; RecoveryBackend = fs; }
NFS_KRB5 { Active_krb5 = false; }
LOG { Default_Log_Level = WARN; }
GANESHA
}

# ganesha_export ID PATH PSEUDO ACCESS TRANSPORTS: one VFS export with no
# root squash, AUTH_SYS.
ganesha_export() {
	cat <<GANESHA
EXPORT {
	Export_Id = $1;
	Path = $2;
	Pseudo = $3;
	Access_Type = $4;
	Squash = No_Root_Squash;
	Protocols = 3;
	Transports = $5;
	SecType = sys;
	FSAL { Name = VFS; }
}
GANESHA
}
