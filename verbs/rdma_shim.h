// C shims for the cgo RDMA provider (rdma_*_linux.go). They wrap the
// static-inline verbs (ibv_post_send, ibv_post_recv, ibv_poll_cq,
// ibv_req_notify_cq, ibv_reg_mr) and batch work requests and completions
// into flat arrays that Go fills or reads once per call. Everything is
// static so each cgo file may include this header.
#ifndef GONFSRDMA_SHIM_H
#define GONFSRDMA_SHIM_H

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#define SHIM_MAX_BATCH 32
#define SHIM_PRIV_MAX 256
#define SHIM_ADDR_MAX 64

struct shim_send_wr {
	uint64_t wr_id;
	uint64_t remote_addr; /* RDMA Read/Write target, or the bind address */
	uint32_t rkey;        /* RDMA Read/Write rkey, or the window's new rkey */
	uint32_t inv_rkey;
	uint32_t opcode;
	uint32_t flags;
	uint32_t num_sge;
	uint32_t sge_off;
	/* IBV_WR_BIND_MW only */
	struct ibv_mw *mw;
	struct ibv_mr *mr;
	uint64_t bind_len;
	uint32_t bind_access;
};

struct shim_recv_wr {
	uint64_t wr_id;
	uint32_t num_sge;
	uint32_t sge_off;
};

#define SHIM_WC_WITH_INV 1
#define SHIM_WC_RECV 2

struct shim_wc {
	uint64_t wr_id;
	uint32_t status;
	uint32_t opcode;
	uint32_t byte_len;
	uint32_t vendor_err;
	uint32_t inv_rkey;
	uint32_t flags;
};

struct shim_cm_event {
	int event;
	int status;
	struct rdma_cm_id *id;
	struct rdma_cm_id *listen_id;
	int priv_len;
	uint8_t priv[SHIM_PRIV_MAX];
	uint8_t initiator_depth;
	uint8_t responder_resources;
	char peer[SHIM_ADDR_MAX];
	char local[SHIM_ADDR_MAX];
};

struct shim_async {
	int type;
	struct ibv_qp *qp;
	struct ibv_cq *cq;
};

// shim_post_send converts n flat WRs into an ibv_send_wr chain and posts
// it; on failure *bad is the index of the first WR not posted.
static int shim_post_send(struct ibv_qp *qp, struct shim_send_wr *w, int n, struct ibv_sge *sges, int *bad) {
	struct ibv_send_wr wrs[SHIM_MAX_BATCH], *badwr = NULL;
	int i, rc;
	if (n <= 0 || n > SHIM_MAX_BATCH)
		return EINVAL;
	memset(wrs, 0, sizeof(wrs[0]) * n);
	for (i = 0; i < n; i++) {
		wrs[i].wr_id = w[i].wr_id;
		wrs[i].sg_list = sges + w[i].sge_off;
		wrs[i].num_sge = (int)w[i].num_sge;
		wrs[i].opcode = (enum ibv_wr_opcode)w[i].opcode;
		wrs[i].send_flags = w[i].flags;
		switch (w[i].opcode) {
		case IBV_WR_RDMA_WRITE:
		case IBV_WR_RDMA_READ:
			wrs[i].wr.rdma.remote_addr = w[i].remote_addr;
			wrs[i].wr.rdma.rkey = w[i].rkey;
			break;
		case IBV_WR_SEND_WITH_INV:
		case IBV_WR_LOCAL_INV:
			wrs[i].invalidate_rkey = w[i].inv_rkey;
			break;
		case IBV_WR_BIND_MW:
			wrs[i].bind_mw.mw = w[i].mw;
			wrs[i].bind_mw.rkey = w[i].rkey;
			wrs[i].bind_mw.bind_info.mr = w[i].mr;
			wrs[i].bind_mw.bind_info.addr = w[i].remote_addr;
			wrs[i].bind_mw.bind_info.length = w[i].bind_len;
			wrs[i].bind_mw.bind_info.mw_access_flags = w[i].bind_access;
			break;
		}
		wrs[i].next = i + 1 < n ? &wrs[i + 1] : NULL;
	}
	rc = ibv_post_send(qp, wrs, &badwr);
	if (rc)
		*bad = badwr ? (int)(badwr - wrs) : 0;
	/* A type 2 bind posted through ibv_post_send does not update
	 * ibv_mw.rkey (only ibv_bind_mw does, for type 1), but providers name
	 * the window by it in the next bind: rxe checks it against the
	 * window's current rkey (rxe_mw.c rxe_bind_mw) and fails the bind
	 * with IBV_WC_MW_BIND_ERR when it is stale. Record each posted bind's
	 * new rkey. */
	for (i = 0; i < n && (!rc || i < *bad); i++)
		if (w[i].opcode == IBV_WR_BIND_MW)
			w[i].mw->rkey = w[i].rkey;
	return rc;
}

// shim_is_rxe reports whether the device is Soft-RoCE: rxe reports vendor
// id 0xFFFFFF (RXE_VENDOR_ID, drivers/infiniband/sw/rxe/rxe_param.h).
static int shim_is_rxe(struct ibv_context *ctx) {
	struct ibv_device_attr a;
	if (ibv_query_device(ctx, &a))
		return 0;
	return a.vendor_id == 0xFFFFFF;
}

// shim_qp_attrs is what shim_query_qp reports of a queue pair.
struct shim_qp_attrs {
	int timeout, retry_cnt, rnr_retry, max_rd_atomic, max_dest_rd_atomic, path_mtu;
};

// shim_query_qp queries the transport attributes of an established queue
// pair (ibv_query_qp); path_mtu in bytes. Returns 0 or -errno.
static int shim_query_qp(struct ibv_qp *qp, struct shim_qp_attrs *out) {
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;
	int rc;
	memset(&a, 0, sizeof(a));
	rc = ibv_query_qp(qp, &a, IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			  IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_PATH_MTU, &ia);
	if (rc)
		return rc > 0 ? -rc : rc;
	out->timeout = a.timeout;
	out->retry_cnt = a.retry_cnt;
	out->rnr_retry = a.rnr_retry;
	out->max_rd_atomic = a.max_rd_atomic;
	out->max_dest_rd_atomic = a.max_dest_rd_atomic;
	out->path_mtu = a.path_mtu ? 128 << a.path_mtu : 0;
	return 0;
}

// shim_rd_atom_limits gives the device's bounds on RDMA Reads in flight
// per QP: as initiator (max_qp_init_rd_atom) and as responder
// (max_qp_rd_atom). rdma_accept refuses larger values with EINVAL.
static int shim_rd_atom_limits(struct ibv_context *ctx, int *init, int *resp) {
	struct ibv_device_attr a;
	if (ibv_query_device(ctx, &a))
		return -errno;
	*init = a.max_qp_init_rd_atom;
	*resp = a.max_qp_rd_atom;
	return 0;
}

static int shim_post_recv(struct ibv_qp *qp, struct shim_recv_wr *w, int n, struct ibv_sge *sges, int *bad) {
	struct ibv_recv_wr wrs[SHIM_MAX_BATCH], *badwr = NULL;
	int i, rc;
	if (n <= 0 || n > SHIM_MAX_BATCH)
		return EINVAL;
	memset(wrs, 0, sizeof(wrs[0]) * n);
	for (i = 0; i < n; i++) {
		wrs[i].wr_id = w[i].wr_id;
		wrs[i].sg_list = sges + w[i].sge_off;
		wrs[i].num_sge = (int)w[i].num_sge;
		wrs[i].next = i + 1 < n ? &wrs[i + 1] : NULL;
	}
	rc = ibv_post_recv(qp, wrs, &badwr);
	if (rc)
		*bad = badwr ? (int)(badwr - wrs) : 0;
	return rc;
}

// inv_mask is the wc_flags bit that says a Receive carried a remote
// invalidation: IBV_WC_WITH_INV, or on rxe also the kernel's
// IB_WC_WITH_INVALIDATE (1 << 2), which rxe writes unconverted into user
// completion queues (rxe_resp.c do_complete); rxe sets no other flag there
// but GRH and WITH_IMM.
static void shim_conv_wc(struct ibv_wc *in, struct shim_wc *out, int recv, unsigned inv_mask) {
	out->wr_id = in->wr_id;
	out->status = in->status;
	out->opcode = in->opcode;
	out->byte_len = in->byte_len;
	out->vendor_err = in->vendor_err;
	out->inv_rkey = 0;
	out->flags = recv ? SHIM_WC_RECV : 0;
	if (in->status == IBV_WC_SUCCESS && (in->wc_flags & inv_mask)) {
		out->flags |= SHIM_WC_WITH_INV;
		out->inv_rkey = in->invalidated_rkey;
	}
}

// shim_poll polls up to n completions into out: the send CQ first, then
// the receive CQ. Completions of different CQs are not ordered by the
// verbs, but when a send-queue WR fails the device writes its error
// completion before it flushes the Receives (the QP enters the error state
// after the failure), so polling the send CQ first returns the cause before
// its consequences. If the receive CQ yields an error and there is room,
// the send CQ is polled again and those completions go first: an error
// completion that landed between the two polls precedes the flushes seen.
static int shim_poll(struct ibv_cq *rcq, struct ibv_cq *scq, struct shim_wc *out, int n, unsigned inv_mask) {
	struct ibv_wc sw[SHIM_MAX_BATCH], rw[SHIM_MAX_BATCH];
	int i, ks, kr, k2, bad = 0;
	if (n > SHIM_MAX_BATCH)
		n = SHIM_MAX_BATCH;
	ks = ibv_poll_cq(scq, n, sw);
	if (ks < 0)
		return ks;
	kr = 0;
	if (ks < n) {
		kr = ibv_poll_cq(rcq, n - ks, rw);
		if (kr < 0) {
			if (ks == 0)
				return kr;
			kr = 0;
		}
	}
	for (i = 0; i < kr; i++)
		bad |= rw[i].status != IBV_WC_SUCCESS;
	if (bad && ks + kr < n) {
		k2 = ibv_poll_cq(scq, n - ks - kr, sw + ks);
		if (k2 > 0)
			ks += k2;
	}
	for (i = 0; i < ks; i++)
		shim_conv_wc(&sw[i], &out[i], 0, inv_mask);
	for (i = 0; i < kr; i++)
		shim_conv_wc(&rw[i], &out[ks + i], 1, inv_mask);
	return ks + kr;
}

// shim_req_notify arms the receive CQ and, unless scq is NULL, the send CQ.
static int shim_req_notify(struct ibv_cq *rcq, struct ibv_cq *scq) {
	int rc = ibv_req_notify_cq(rcq, 0);
	return rc || !scq ? rc : ibv_req_notify_cq(scq, 0);
}

// shim_get_cq_event reads one event from a non-blocking completion
// channel and acks it: 1 got one, 0 none ready, <0 -errno.
static int shim_get_cq_event(struct ibv_comp_channel *ch) {
	struct ibv_cq *cq;
	void *ctx;
	if (ibv_get_cq_event(ch, &cq, &ctx))
		return errno == EAGAIN ? 0 : -errno;
	ibv_ack_cq_events(cq, 1);
	return 1;
}

static struct ibv_mr *shim_reg_mr(struct ibv_pd *pd, void *addr, size_t len, int access) {
	return ibv_reg_mr(pd, addr, len, access);
}

static void shim_fmt_addr(struct sockaddr *sa, char *buf) {
	char ip[INET6_ADDRSTRLEN] = "";
	buf[0] = 0;
	if (!sa)
		return;
	if (sa->sa_family == AF_INET) {
		struct sockaddr_in *s = (struct sockaddr_in *)sa;
		inet_ntop(AF_INET, &s->sin_addr, ip, sizeof(ip));
		snprintf(buf, SHIM_ADDR_MAX, "%s:%u", ip, ntohs(s->sin_port));
	} else if (sa->sa_family == AF_INET6) {
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)sa;
		inet_ntop(AF_INET6, &s->sin6_addr, ip, sizeof(ip));
		snprintf(buf, SHIM_ADDR_MAX, "[%s]:%u", ip, ntohs(s->sin6_port));
	}
}

static void shim_id_addrs(struct rdma_cm_id *id, char *local, char *peer) {
	shim_fmt_addr(rdma_get_local_addr(id), local);
	shim_fmt_addr(rdma_get_peer_addr(id), peer);
}

// shim_release_context lets the kernel finish removing the device of ctx
// when librdmacm cannot close ctx itself (see forgetDevice): it puts
// /dev/null in place of the context's command and async-event
// descriptors (dup2 onto the same numbers), so the uverbs file is
// released now, while the numbers stay taken until ibv_close_device
// closes them, whenever librdmacm gets to it. Only for a context nothing
// is left on: no QP, CQ, MR, PD or mapping of it. 0 or -errno.
static int shim_release_context(struct ibv_context *ctx) {
	int fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int rc = 0;
	if (dup2(fd, ctx->cmd_fd) < 0 || dup2(fd, ctx->async_fd) < 0)
		rc = -errno;
	fcntl(ctx->cmd_fd, F_SETFD, FD_CLOEXEC);
	fcntl(ctx->async_fd, F_SETFD, FD_CLOEXEC);
	close(fd);
	return rc;
}

// shim_get_cm_event reads one CM event from a non-blocking channel,
// copies what Go needs and acks it: 1 got one, 0 none ready, <0 -errno.
static int shim_get_cm_event(struct rdma_event_channel *ch, struct shim_cm_event *out) {
	struct rdma_cm_event *ev;
	if (rdma_get_cm_event(ch, &ev))
		return errno == EAGAIN ? 0 : -errno;
	memset(out, 0, sizeof(*out));
	out->event = ev->event;
	out->status = ev->status;
	out->id = ev->id;
	out->listen_id = ev->listen_id;
	switch (ev->event) {
	case RDMA_CM_EVENT_CONNECT_REQUEST:
	case RDMA_CM_EVENT_ESTABLISHED:
	case RDMA_CM_EVENT_REJECTED:
		if (ev->param.conn.private_data && ev->param.conn.private_data_len) {
			out->priv_len = ev->param.conn.private_data_len;
			if (out->priv_len > SHIM_PRIV_MAX)
				out->priv_len = SHIM_PRIV_MAX;
			memcpy(out->priv, ev->param.conn.private_data, out->priv_len);
		}
		out->initiator_depth = ev->param.conn.initiator_depth;
		out->responder_resources = ev->param.conn.responder_resources;
		break;
	default:
		break;
	}
	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
		shim_id_addrs(ev->id, out->local, out->peer);
	rdma_ack_cm_event(ev);
	return 1;
}

static int shim_get_async(struct ibv_context *ctx, struct shim_async *out) {
	struct ibv_async_event ev;
	if (ibv_get_async_event(ctx, &ev))
		return errno == EAGAIN ? 0 : -errno;
	memset(out, 0, sizeof(*out));
	out->type = ev.event_type;
	switch (ev.event_type) {
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		out->qp = ev.element.qp;
		break;
	case IBV_EVENT_CQ_ERR:
		out->cq = ev.element.cq;
		break;
	default:
		break;
	}
	ibv_ack_async_event(&ev);
	return 1;
}

static int shim_parse_addr(const char *host, int port, struct sockaddr_storage *ss) {
	memset(ss, 0, sizeof(*ss));
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
	if (host[0] == 0) {
		s4->sin_family = AF_INET;
		s4->sin_addr.s_addr = htonl(INADDR_ANY);
		s4->sin_port = htons(port);
		return 0;
	}
	if (inet_pton(AF_INET, host, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
		return 0;
	}
	if (inet_pton(AF_INET6, host, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		return 0;
	}
	return -EINVAL;
}

static int shim_bind_listen(struct rdma_cm_id *id, const char *host, int port, int backlog) {
	struct sockaddr_storage ss;
	if (shim_parse_addr(host, port, &ss))
		return -EINVAL;
	if (rdma_bind_addr(id, (struct sockaddr *)&ss))
		return -errno;
	if (rdma_listen(id, backlog))
		return -errno;
	return 0;
}

/* src_host may be NULL: let the CM pick the source address. */
static int shim_resolve_addr(struct rdma_cm_id *id, const char *src_host, int src_port,
			     const char *host, int port, int timeout_ms) {
	struct sockaddr_storage ss, src;
	struct sockaddr *srcp = NULL;
	if (shim_parse_addr(host, port, &ss))
		return -EINVAL;
	if (src_host) {
		if (shim_parse_addr(src_host, src_port, &src))
			return -EINVAL;
		srcp = (struct sockaddr *)&src;
	}
	if (rdma_resolve_addr(id, srcp, (struct sockaddr *)&ss, timeout_ms))
		return -errno;
	return 0;
}

static int shim_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_cq *scq, struct ibv_cq *rcq,
			  int max_send_wr, int max_recv_wr, int max_send_sge, int max_recv_sge) {
	struct ibv_qp_init_attr a;
	memset(&a, 0, sizeof(a));
	a.send_cq = scq;
	a.recv_cq = rcq;
	a.qp_type = IBV_QPT_RC;
	a.sq_sig_all = 0;
	a.cap.max_send_wr = max_send_wr;
	a.cap.max_recv_wr = max_recv_wr;
	a.cap.max_send_sge = max_send_sge;
	a.cap.max_recv_sge = max_recv_sge;
	if (rdma_create_qp(id, pd, &a))
		return -errno;
	return 0;
}

// shim_set_ack_timeout asks the connection manager to give the QP the
// local ACK timeout exponent t when it moves it to RTS (librdmacm
// RDMA_OPTION_ID_ACK_TIMEOUT; Linux 4.13 and later).
static int shim_set_ack_timeout(struct rdma_cm_id *id, uint8_t t) {
	if (rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &t, sizeof(t)))
		return -errno;
	return 0;
}

static int shim_connect(struct rdma_cm_id *id, const void *priv, int len, int ird, int ord, int retry, int rnr, int accept) {
	struct rdma_conn_param p;
	memset(&p, 0, sizeof(p));
	p.private_data = len ? priv : NULL;
	p.private_data_len = (uint8_t)len;
	p.initiator_depth = (uint8_t)ird;
	p.responder_resources = (uint8_t)ord;
	p.retry_count = (uint8_t)retry;
	p.rnr_retry_count = (uint8_t)rnr;
	if (accept ? rdma_accept(id, &p) : rdma_connect(id, &p))
		return -errno;
	return 0;
}

// shim_to_error_and_drain moves the QP to the error state and posts one
// Receive and one Send marker whose flush completions tell Poll that
// every earlier WR has been flushed (the kernel's ib_drain_qp). Returns a
// bitmask of the markers that could not be posted (1 recv, 2 send).
static int shim_to_error_and_drain(struct ibv_qp *qp, uint64_t recv_id, uint64_t send_id) {
	struct ibv_qp_attr attr;
	struct ibv_recv_wr rwr, *rbad;
	struct ibv_send_wr swr, *sbad;
	int failed = 0;
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_ERR;
	ibv_modify_qp(qp, &attr, IBV_QP_STATE);
	memset(&rwr, 0, sizeof(rwr));
	rwr.wr_id = recv_id;
	if (ibv_post_recv(qp, &rwr, &rbad))
		failed |= 1;
	memset(&swr, 0, sizeof(swr));
	swr.wr_id = send_id;
	swr.opcode = IBV_WR_SEND;
	swr.send_flags = IBV_SEND_SIGNALED;
	if (ibv_post_send(qp, &swr, &sbad))
		failed |= 2;
	/* Move to Error once more (allowed from any state, IB spec 10.3.1):
	 * some providers process the receive queue of a QP in the error state
	 * only when something schedules the responder. rxe's user-space
	 * ibv_post_recv just writes the shared ring without entering the
	 * kernel, so a marker posted after the QP went to error would never be
	 * flushed; the transition runs rxe_qp_error, which flushes it. */
	ibv_modify_qp(qp, &attr, IBV_QP_STATE);
	return failed;
}

#endif
