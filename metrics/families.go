package metrics

import "github.com/prometheus/client_golang/prometheus"

// Namespace prefixes every metric of the server.
const Namespace = "gonfsrdma"

// Family describes one exported metric family.
type Family struct {
	Name   string // full name, Namespace included
	Help   string
	Type   string // "counter", "gauge" or "histogram"
	Labels []string
}

// desc returns the family's Prometheus descriptor.
func (f Family) desc() *prometheus.Desc {
	return prometheus.NewDesc(f.Name, f.Help, f.Labels, nil)
}

func (f Family) valueType() prometheus.ValueType {
	if f.Type == "counter" {
		return prometheus.CounterValue
	}
	return prometheus.GaugeValue
}

// The families. Each is exported only when the source that feeds it is
// in Sources.
var (
	famBuildInfo = Family{Namespace + "_build_info", "Always 1; the version label is the server's version.", "gauge", []string{"version"}}
	famReady     = Family{Namespace + "_ready", "1 when every listener is up (what /healthz answers), else 0.", "gauge", nil}

	famConns          = Family{Namespace + "_connections", "Connections open, by transport (NFS, MOUNT, rpcbind, NLM and NSM over TCP; NFS over RDMA).", "gauge", []string{"transport"}}
	famTCPBuffers     = Family{Namespace + "_tcp_buffer_bytes", "Bytes of TCP call and reply buffers held by connections (see --buffer-budget-mib).", "gauge", nil}
	famRDMACopied     = Family{Namespace + "_rdma_copied_bytes_total", "Bytes the RDMA transport copied between Go memory and registered buffers (inline pull-up, Reply-chunk staging, inline parts around Read chunks).", "counter", nil}
	famRDMAChunks     = Family{Namespace + "_rdma_chunks_total", "Chunks offered by RPC-over-RDMA calls, by kind (read, write, reply; RFC 8166 section 3.4.3).", "counter", []string{"kind"}}
	famRDMABytes      = Family{Namespace + "_rdma_bytes_total", "RPC-over-RDMA bytes by how they moved: rdma_read (Read chunks pulled by the server), rdma_write (Write and Reply chunks pushed), inline_recv and inline_send (whole Receive and Send messages).", "counter", []string{"method"}}
	famRDMAReplyChunk = Family{Namespace + "_rdma_reply_chunk_replies_total", "Replies sent through the client's Reply chunk (RDMA_NOMSG).", "counter", nil}
	famRDMAQPErrors   = Family{Namespace + "_rdma_qp_errors_total", "Work completions in error other than flushes: a queue pair failed.", "counter", nil}
	famRDMADisconn    = Family{Namespace + "_rdma_disconnects_total", "RPC-over-RDMA connections that ended (client close, idle timeout, error, shutdown).", "counter", nil}
	famRDMAGranted    = Family{Namespace + "_rdma_credits_granted", "Credits granted to the RPC-over-RDMA connections open (--rdma-credits each).", "gauge", nil}
	famRDMAInUse      = Family{Namespace + "_rdma_credits_in_use", "RPC-over-RDMA calls received and not yet answered (each holds a credit).", "gauge", nil}
	famRDMARegistered = Family{Namespace + "_rdma_registered_bytes", "Registered (pinned) memory of the RPC-over-RDMA connections (see --rdma-max-pinned-mib).", "gauge", nil}
	famRDMAShortages  = Family{Namespace + "_rdma_buffer_shortages_total", "RPC-over-RDMA connections dropped because a call could not get a registered buffer.", "counter", nil}
	famRDMAQuick      = Family{Namespace + "_rdma_completion_loop_calls_total", "Calls run on an RDMA connection's completion goroutine (quick metadata calls without chunks) instead of a worker.", "counter", nil}
	famDRCEntries     = Family{Namespace + "_drc_entries", "Replies (and calls in progress) held by the duplicate request cache.", "gauge", nil}
	famLocksHeld      = Family{Namespace + "_nlm_locks_held", "Byte-range locks granted by the lock manager (NLM) and held now.", "gauge", nil}
	famLocksBlocked   = Family{Namespace + "_nlm_locks_blocked", "Blocked NLM lock requests waiting for a grant.", "gauge", nil}
	famShares         = Family{Namespace + "_nlm_shares", "NLM share reservations (DOS-style opens) held now.", "gauge", nil}
	famGrace          = Family{Namespace + "_nlm_grace_active", "1 while the lock manager's grace period (reclaims only) is on, else 0.", "gauge", nil}
	famGraceEnd       = Family{Namespace + "_nlm_grace_end_timestamp_seconds", "When the current or last grace period ends or ended (Unix time).", "gauge", nil}
	famReloads        = Family{Namespace + "_exports_reloads_total", "Exports file reloads (SIGHUP), by result: ok, or error (the previous exports stay).", "counter", []string{"result"}}
	famReloadTime     = Family{Namespace + "_exports_last_reload_success_timestamp_seconds", "When the exports table was last loaded successfully (start or reload, Unix time).", "gauge", nil}
)

// Families fed by counters in the packages that own the events.
var (
	famCalls              = Family{Namespace + "_rpc_calls_total", "RPC calls answered, by program, version, procedure and status: the status word the results begin with (nfsstat3 names for NFS, mountstat3 for MNT, nlm4_stats after the cookie for NLM's TEST, LOCK, CANCEL, UNLOCK, GRANTED, SHARE, UNSHARE and NM_LOCK, NSM's res for SM_STAT and SM_MON; OTHER for a value without a name), SUCCESS for procedures whose results have none (NLM's _MSG and _RES, rpcbind, NULL), or the RPC-level answer (GARBAGE_ARGS, SYSTEM_ERR, AUTH_ERROR). Replies replayed from the DRC are DRC hits, not calls.", "counter", []string{"program", "version", "procedure", "status"}}
	famCallDuration       = Family{Namespace + "_rpc_call_duration_seconds", "Time from decoding a call to its reply being ready, by procedure (power-of-two buckets from 1.024 µs); one call in 16 of each procedure is timed, so the count is a sixteenth of the calls.", "histogram", []string{"program", "version", "procedure"}}
	famRPCBytes           = Family{Namespace + "_rpc_bytes_total", "RPC message bytes, by transport and direction (in: calls as dispatched, Read-chunk data included; out: replies, payload included).", "counter", []string{"transport", "direction"}}
	famRejected           = Family{Namespace + "_rpc_rejected_total", "RPC calls answered before any procedure ran, by reason (GARBAGE_HEADER, RPC_MISMATCH, AUTH_ERROR, PROG_UNAVAIL, PROG_MISMATCH, PROC_UNAVAIL).", "counter", []string{"reason"}}
	famDRCHits            = Family{Namespace + "_drc_hits_total", "Retransmissions answered from the duplicate request cache.", "counter", nil}
	famDRCMisses          = Family{Namespace + "_drc_misses_total", "Non-idempotent calls run and cached by the duplicate request cache.", "counter", nil}
	famDRCEvictions       = Family{Namespace + "_drc_evictions_total", "Replies dropped from the duplicate request cache for its bounds or their age.", "counter", nil}
	famDRCDrops           = Family{Namespace + "_drc_in_progress_drops_total", "Retransmissions of a call still in progress, dropped unanswered.", "counter", nil}
	famFileCacheHits      = Family{Namespace + "_vfs_open_file_cache_hits_total", "File handle resolutions answered from the backend's open-file cache, by export.", "counter", []string{"export"}}
	famFileCacheMisses    = Family{Namespace + "_vfs_open_file_cache_misses_total", "File handle resolutions that opened the object (open_by_handle_at), by export.", "counter", []string{"export"}}
	famFileCacheEvictions = Family{Namespace + "_vfs_open_file_cache_evictions_total", "Open-file cache entries closed for the cache's bound, by export.", "counter", []string{"export"}}
	famOpenFiles          = Family{Namespace + "_vfs_open_files", "Descriptors the backend's open-file cache holds, by export.", "gauge", []string{"export"}}
	famNFSBytes           = Family{Namespace + "_nfs_bytes_total", "NFS READ and WRITE data bytes, by export, transport and operation.", "counter", []string{"export", "transport", "op"}}

	famClientCalls  = Family{Namespace + "_client_calls_total", "RPC calls of the busiest client addresses (the top --metrics-top-clients by bytes).", "counter", []string{"client"}}
	famClientBytes  = Family{Namespace + "_client_bytes_total", "RPC bytes of the busiest client addresses, by direction.", "counter", []string{"client", "direction"}}
	famClientsKnown = Family{Namespace + "_clients_known", "Client addresses the per-client table remembers (with a connection open, or among the busiest idle ones).", "gauge", nil}
)
