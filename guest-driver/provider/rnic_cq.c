// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rnic userspace provider: completion queues.
 *
 * The CQ buffer is one dbrec page followed by 1 << log_size CQEs.  The
 * device writes each CQE body and then its owner byte; poll_cq owns
 * entry ci & mask when the owner bit differs from the pass parity of ci,
 * copies the entry, validates every field against the provider's own
 * bookkeeping and publishes its consumer index in the dbrec.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <util/mmio.h>
#include <util/udma_barrier.h>
#include <util/util.h>

#include "rnic.h"

/*
 * What an extended CQ can report: no tags, and timestamps of the device
 * clock but not wall-clock ones: that clock runs with the VM, in no fixed
 * relation to the guest's real time.
 */
static uint64_t rnic_cq_ex_wc_flags(const struct rnic_context *ctx)
{
	return IBV_WC_STANDARD_FLAGS |
	       (ctx->has_clock ? IBV_WC_EX_WITH_COMPLETION_TIMESTAMP : 0);
}

/* A ring for at least 'cqe' CQEs, into cq's ring fields; an errno. */
static int rnic_cq_ring_alloc(struct rnic_context *ctx, int cqe,
			      struct rnic_cq *cq)
{
	struct rnic_ring_mem mem = { .type = RNIC_RES_TYPE_CQ };
	unsigned int log_size;
	int ret;

	if (cqe <= 0 || (uint32_t)cqe > ctx->max_cqe)
		return EINVAL;
	/* At least one entry more than asked for, rounded to a power of 2. */
	log_size = rnic_log2_ceil((uint32_t)cqe + 1);
	if (log_size > RNIC_CQ_MAX_LOG_SIZE)
		return EINVAL;
	cq->log_size = log_size;
	mem.size = RNIC_CQ_DBREC_PAGE_SIZE + ((size_t)RNIC_CQE_SIZE << log_size);
	ret = rnic_alloc_ring(cq->parent_domain ?
			      &cq->parent_domain->ibv_pd : NULL, &mem);
	if (ret)
		return ret;
	cq->buf = mem.buf;
	cq->buf_size = mem.size;
	cq->buf_owner = mem.owner;
	cq->dbrec = cq->buf;
	cq->cqes = (struct rnic_cqe *)((uint8_t *)cq->buf +
				       RNIC_CQ_DBREC_PAGE_SIZE);
	return 0;
}

static void rnic_cq_ring_free(struct rnic_cq *cq)
{
	struct rnic_ring_mem mem = { .buf = cq->buf, .size = cq->buf_size,
				     .owner = cq->buf_owner,
				     .type = RNIC_RES_TYPE_CQ };

	rnic_free_ring(&mem);
	cq->buf = NULL;
}

/*
 * The CQ buffer and bookkeeping; the caller creates the kernel object.
 * parent_domain, if any, allocates the ring.
 */
static struct rnic_cq *rnic_cq_alloc(struct rnic_context *ctx, int cqe,
				     struct rnic_pd *parent_domain)
{
	struct rnic_cq *cq;
	int ret;

	cq = calloc(1, sizeof(*cq));
	if (!cq) {
		errno = ENOMEM;
		return NULL;
	}
	if (pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE)) {
		free(cq);
		errno = ENOMEM;
		return NULL;
	}
	cq->parent_domain = parent_domain;
	ret = rnic_cq_ring_alloc(ctx, cqe, cq);
	if (!ret && parent_domain)
		rnic_pd_get(&parent_domain->ibv_pd);
	if (ret) {
		pthread_spin_destroy(&cq->lock);
		free(cq);
		errno = ret;
		return NULL;
	}
	return cq;
}

static void rnic_cq_free(struct rnic_cq *cq)
{
	rnic_cq_ring_free(cq);
	if (cq->parent_domain)
		rnic_pd_put(&cq->parent_domain->ibv_pd);
	pthread_spin_destroy(&cq->lock);
	free(cq);
}

static void rnic_cq_fill_cmd(const struct rnic_cq *cq,
			     struct rnic_ucreate_cq *drv)
{
	drv->buf_addr = (uintptr_t)cq->buf;
	drv->buf_size = cq->buf_size;
	drv->log_size = cq->log_size;
}

/* The kernel must have made the ring we allocated, not another one. */
static int rnic_cq_check_resp(struct rnic_context *ctx, struct rnic_cq *cq,
			      const struct rnic_ucreate_cq_resp *drv)
{
	if (drv->log_size != cq->log_size) {
		verbs_err(&ctx->ibv_ctx,
			  "kernel made CQ %u with log_size %u, asked %u\n",
			  drv->cqn, drv->log_size,
			  cq->log_size);
		return EPROTO;
	}
	cq->cqn = drv->cqn;
	return 0;
}

struct ibv_cq *rnic_create_cq(struct ibv_context *ibctx, int cqe,
			      struct ibv_comp_channel *channel,
			      int comp_vector)
{
	struct rnic_context *ctx = to_rctx(ibctx);
	struct rnic_create_cq_resp resp = {};
	struct rnic_create_cq_cmd cmd = {};
	struct rnic_cq *cq;
	int ret;

	cq = rnic_cq_alloc(ctx, cqe, NULL);
	if (!cq)
		return NULL;
	rnic_cq_fill_cmd(cq, &cmd.drv);
	ret = ibv_cmd_create_cq(ibctx, cqe, channel, comp_vector, &cq->vcq.cq,
				&cmd.ibv_cmd, sizeof(cmd), &resp.ibv_resp,
				sizeof(resp));
	if (ret)
		goto err;
	ret = rnic_cq_check_resp(ctx, cq, &resp.drv);
	if (ret) {
		ibv_cmd_destroy_cq(&cq->vcq.cq);
		goto err;
	}
	return &cq->vcq.cq;
err:
	rnic_cq_free(cq);
	errno = ret;
	return NULL;
}

/*
 * The device copies the CQEs not yet polled to the start of the new ring;
 * holding the lock across the command keeps pollers off the old one.
 */
int rnic_resize_cq(struct ibv_cq *ibcq, int cqe)
{
	struct rnic_context *ctx = to_rctx(ibcq->context);
	struct rnic_cq *cq = to_rcq(ibcq);
	struct rnic_resize_cq_resp resp = {};
	struct rnic_resize_cq_cmd cmd = {};
	struct rnic_cq nr = { .parent_domain = cq->parent_domain };
	int ret;

	ret = rnic_cq_ring_alloc(ctx, cqe, &nr);
	if (ret)
		return ret;
	rnic_cq_fill_cmd(&nr, &cmd.drv);

	pthread_spin_lock(&cq->lock);
	ret = ibv_cmd_resize_cq(ibcq, cqe, &cmd.ibv_cmd, sizeof(cmd),
				&resp.ibv_resp, sizeof(resp));
	if (!ret && resp.drv.log_size != nr.log_size) {
		/* The device may already use the new ring: keep both. */
		verbs_err(&ctx->ibv_ctx,
			  "kernel resized CQ %u to log_size %u, asked %u\n",
			  cq->cqn, resp.drv.log_size, nr.log_size);
		pthread_spin_unlock(&cq->lock);
		return EPROTO;
	}
	if (ret) {
		pthread_spin_unlock(&cq->lock);
		rnic_cq_ring_free(&nr);
		return ret;
	}
	rnic_cq_ring_free(cq);
	cq->buf = nr.buf;
	cq->buf_size = nr.buf_size;
	cq->buf_owner = nr.buf_owner;
	cq->dbrec = nr.dbrec;
	cq->cqes = nr.cqes;
	cq->log_size = nr.log_size;
	cq->ci = 0;
	pthread_spin_unlock(&cq->lock);
	return 0;
}

int rnic_destroy_cq(struct ibv_cq *ibcq)
{
	struct rnic_cq *cq = to_rcq(ibcq);
	int ret;

	ret = ibv_cmd_destroy_cq(ibcq);
	if (ret)
		return ret;
	rnic_cq_free(cq);
	return 0;
}

static bool rnic_wc_opcode(uint8_t op, enum ibv_wc_opcode *out, bool *recv)
{
	*recv = false;
	switch (op) {
	case RNIC_WC_SEND:
		*out = IBV_WC_SEND;
		return true;
	case RNIC_WC_RDMA_WRITE:
		*out = IBV_WC_RDMA_WRITE;
		return true;
	case RNIC_WC_RDMA_READ:
		*out = IBV_WC_RDMA_READ;
		return true;
	case RNIC_WC_COMP_SWAP:
		*out = IBV_WC_COMP_SWAP;
		return true;
	case RNIC_WC_FETCH_ADD:
		*out = IBV_WC_FETCH_ADD;
		return true;
	case RNIC_WC_BIND_MW:
		*out = IBV_WC_BIND_MW;
		return true;
	case RNIC_WC_LOCAL_INV:
		*out = IBV_WC_LOCAL_INV;
		return true;
	case RNIC_WC_FLUSH:
		*out = IBV_WC_FLUSH;
		return true;
	case RNIC_WC_ATOMIC_WRITE:
		*out = IBV_WC_ATOMIC_WRITE;
		return true;
	case RNIC_WC_RECV:
		*out = IBV_WC_RECV;
		*recv = true;
		return true;
	case RNIC_WC_RECV_RDMA_WITH_IMM:
		*out = IBV_WC_RECV_RDMA_WITH_IMM;
		*recv = true;
		return true;
	default:
		/* RNIC_WC_REG_MR is a kernel-only completion. */
		return false;
	}
}

/*
 * Retire the WQE in 'slot' of wq.  Send queues retire in order, and a
 * completion also retires the unsignaled WQEs before it; receive queues
 * complete strictly in order; SRQ slots complete in any order but each
 * exactly once.  Returns false (and retires nothing) for a slot that is
 * not outstanding.
 */
static bool rnic_wq_retire(struct rnic_wq *wq, uint32_t slot, bool in_order,
			   uint64_t *wr_id, uint32_t *left)
{
	uint32_t mask;
	bool ok = false;
	uint32_t pos;

	pthread_spin_lock(&wq->lock);
	if (wq->busy) {
		/* SRQ CQEs carry 16-bit indices: the shadow's. */
		uint32_t idx = rnic_srq_full_index(wq->head, slot);

		slot &= RNIC_SRQ_SHADOW - 1;
		if (!wq->busy[slot])
			goto out;
		wq->busy[slot] = 0;
		/* The device took every index up to this one. */
		if ((int32_t)(idx + 1 - wq->tail) > 0)
			wq->tail = idx + 1;
		*wr_id = wq->wr_id[slot];
		ok = true;
		goto out;
	}
	mask = (1u << wq->log_size) - 1;
	slot &= mask;
	if (!rnic_wq_slot_outstanding(wq->head, wq->tail, wq->log_size, slot,
				      &pos))
		goto out;

	if (in_order) {
		if (pos != 0)
			goto out;
		wq->tail++;
	} else {
		wq->tail += pos + 1;
	}
	*wr_id = wq->wr_id[slot];
	if (left)
		*left = wq->head - wq->tail;
	ok = true;
out:
	pthread_spin_unlock(&wq->lock);
	return ok;
}

/* Returns true when the CQE is valid and *wc is filled. */
/*
 * RoCE has no service level on the wire, so ConnectX reports the received
 * packet's header type in a UD completion's SL (0: RoCE v1 GRH, 1: RoCE v2
 * over IPv6, 2: RoCE v2 over IPv4), and UCX's UD transport reads it to
 * know which GRH bytes hold the destination address: without it UCX drops
 * every UD packet over IPv4.  Do as ConnectX does.
 */
static uint8_t rnic_roce_pkt_type(uint8_t net_type)
{
	switch (net_type) {
	case RNIC_NET_IPV4:
		return 2;
	case RNIC_NET_IPV6:
		return 1;
	default:
		return 0;
	}
}

static bool rnic_parse_cqe(struct rnic_context *ctx, struct rnic_cq *cq,
			   const struct rnic_cqe *cqe, struct ibv_wc *wc)
{
	uint32_t qpn = le32toh(cqe->qpn) & RNIC_DB_QN_MASK;
	uint32_t slot = le16toh(cqe->wqe_idx);
	enum ibv_wc_opcode opcode;
	struct rnic_wq *wq;
	struct rnic_qp *qp;
	uint32_t left = 0;
	uint64_t wr_id;
	bool recv;

	qp = rnic_find_qp(ctx, qpn);
	if (!qp) {
		verbs_err_datapath(&ctx->ibv_ctx,
				   "CQ %u: CQE for unknown QPN %u dropped\n",
				   cq->cqn, qpn);
		return false;
	}
	if (!rnic_wc_opcode(cqe->opcode, &opcode, &recv)) {
		verbs_err_datapath(&ctx->ibv_ctx,
				   "CQ %u: CQE with unknown opcode 0x%x dropped\n",
				   cq->cqn, cqe->opcode);
		return false;
	}
	if ((recv ? qp->recv_cq : qp->send_cq) != cq) {
		verbs_err_datapath(&ctx->ibv_ctx,
				   "CQ %u: CQE of QP %u belongs to another CQ\n",
				   cq->cqn, qpn);
		return false;
	}

	if (!recv)
		wq = &qp->sq;
	else if (qp->srq)
		wq = &qp->srq->wq;
	else
		wq = &qp->rq;

	if (!rnic_wq_retire(wq, slot, recv, &wr_id, &left)) {
		verbs_err_datapath(&ctx->ibv_ctx,
				   "CQ %u: QP %u %s CQE names slot %u, not outstanding\n",
				   cq->cqn, qpn, recv ? "recv" : "send", slot);
		return false;
	}
	if (!recv)
		cq->sq_backlog = left;

	memset(wc, 0, sizeof(*wc));
	wc->wr_id = wr_id;
	wc->status = cqe->status >= RNIC_WC_STATUS_MAX ?
			     IBV_WC_GENERAL_ERR :
			     (enum ibv_wc_status)cqe->status;
	wc->opcode = opcode;
	wc->vendor_err = cqe->vendor_err;
	wc->qp_num = qpn;
	wc->byte_len = le32toh(cqe->byte_len);
	if (recv) {
		if (cqe->flags & RNIC_CQE_WITH_IMM) {
			/* ImmDt bytes are stored in wire order. */
			wc->imm_data = cqe->imm_inv;
			wc->wc_flags |= IBV_WC_WITH_IMM;
		} else if (cqe->flags & RNIC_CQE_WITH_INV) {
			wc->invalidated_rkey = le32toh(cqe->imm_inv);
			wc->wc_flags |= IBV_WC_WITH_INV;
		}
		if (cqe->net_type == RNIC_NET_IB) {
			/* IB names the sender by LID; the GRH is optional. */
			if (cqe->flags & RNIC_CQE_GRH)
				wc->wc_flags |= IBV_WC_GRH;
			wc->slid = le16toh(cqe->slid);
			wc->sl = cqe->sl & 0xf;
			wc->dlid_path_bits = cqe->dlid_path_bits;
		} else if (cqe->flags & RNIC_CQE_GRH) {
			wc->wc_flags |= IBV_WC_GRH;
			wc->sl = rnic_roce_pkt_type(cqe->net_type);
		}
		wc->src_qp = le32toh(cqe->src_qp) & RNIC_DB_QN_MASK;
	}
	return true;
}

/* Takes the oldest outstanding WQE of wq; false when there is none. */
static bool rnic_wq_take_oldest(struct rnic_wq *wq, uint64_t *wr_id)
{
	bool ok = false;

	pthread_spin_lock(&wq->lock);
	if (wq->buf && wq->tail != wq->head) {
		*wr_id = wq->wr_id[wq->tail & ((1u << wq->log_size) - 1)];
		wq->tail++;
		ok = true;
	}
	pthread_spin_unlock(&wq->lock);
	return ok;
}

/*
 * The kernel marks a CQ dead when its device is removed or fails: nothing
 * will write the ring again, so work outstanding on the queues that
 * complete here is completed as WR_FLUSH_ERR by us, one WQE per call, as
 * the device would have flushed it.  SRQ WQEs belong to no QP; they stay.
 */
static int rnic_cq_flush_dead(struct rnic_context *ctx, struct rnic_cq *cq,
			      struct ibv_wc *wc)
{
	struct rnic_qp *qp = NULL;
	uint32_t hi, lo;
	uint64_t wr_id;
	bool recv = false;

	pthread_mutex_lock(&ctx->qp_table_mutex);
	for (hi = 0; hi < RNIC_QP_TABLE_SIZE; hi++) {
		struct rnic_qp **l2 = ctx->qp_table[hi];

		for (lo = 0; l2 && lo < RNIC_QP_TABLE_SIZE; lo++) {
			qp = l2[lo];
			if (!qp)
				continue;
			if (qp->send_cq == cq &&
			    rnic_wq_take_oldest(&qp->sq, &wr_id))
				goto found;
			if (qp->recv_cq == cq && !qp->srq &&
			    rnic_wq_take_oldest(&qp->rq, &wr_id)) {
				recv = true;
				goto found;
			}
		}
	}
	pthread_mutex_unlock(&ctx->qp_table_mutex);
	return ENOENT;
found:
	memset(wc, 0, sizeof(*wc));
	wc->wr_id = wr_id;
	wc->status = IBV_WC_WR_FLUSH_ERR;
	wc->opcode = recv ? IBV_WC_RECV : IBV_WC_SEND;
	wc->qp_num = qp->qpn;
	pthread_mutex_unlock(&ctx->qp_table_mutex);
	return 0;
}

static bool rnic_cq_dead(struct rnic_cq *cq)
{
	return le32toh(*(volatile rnic_le32 *)&cq->dbrec->state) &
	       RNIC_CQ_DBREC_DEAD;
}

/*
 * Consume CQEs until one parses into *wc.  ENOENT when the ring holds no
 * new entry (and, on a dead CQ, no work is left to fail); invalid entries
 * are consumed and dropped on the way.
 */
static int rnic_cq_next_wc(struct rnic_context *ctx, struct rnic_cq *cq,
			   struct ibv_wc *wc)
{
	uint32_t mask = (1u << cq->log_size) - 1;

	for (;;) {
		struct rnic_cqe *hw = &cq->cqes[cq->ci & mask];
		struct rnic_cqe cqe;
		uint8_t owner;

		owner = *(volatile uint8_t *)&hw->owner;
		if (!rnic_owner_is_new(owner, cq->ci, cq->log_size))
			return rnic_cq_dead(cq) ?
				       rnic_cq_flush_dead(ctx, cq, wc) : ENOENT;
		/* The body was written before the owner byte. */
		udma_from_device_barrier();
		memcpy(&cqe, hw, sizeof(cqe));
		cq->ci++;
		if (rnic_parse_cqe(ctx, cq, &cqe, wc)) {
			cq->cur_ts = le64toh(cqe.timestamp);
			return 0;
		}
	}
}

static void rnic_cq_publish_ci(struct rnic_cq *cq)
{
	/* Our reads of the consumed entries come before the device may
	 * reuse them. */
	udma_to_device_barrier();
	*(volatile rnic_le32 *)&cq->dbrec->ci = htole32(cq->ci);
}

/*
 * The device is emulated on the host CPUs that also run the vCPU polling
 * it, so a program spinning on empty CQs takes CPU time from the very
 * device model that is to fill them.  Once no poll of the context has
 * found anything for poll_spin_ns, each further empty poll naps
 * poll_nap_ns: the guest CPU idles and the host thread running it
 * sleeps.  Per context, not per CQ: a program may poll a CQ that stays
 * empty (its send CQ, say) between polls of one that is busy.
 *
 * A CQ whose send queue has a deep backlog is the bandwidth case: the
 * next completion is at least a nap away, and every moment the vCPU
 * spins is taken from the device working through that backlog, so an
 * empty poll of it naps at once.  Latency-bound programs have one or two
 * WQEs outstanding and keep the spin.  Called with cq->lock held;
 * returns whether this poll should nap.
 */
static bool rnic_cq_poll_idle(struct rnic_context *ctx, struct rnic_cq *cq,
			      bool found)
{
	struct timespec ts;
	uint64_t now, since;

	if (!ctx->poll_nap_ns)
		return false;
	if (!found && ctx->poll_backlog && cq->sq_backlog >= ctx->poll_backlog)
		return true;
	if (found) {
		/* Read first: the store would bounce the line between pollers. */
		if (atomic_load_explicit(&ctx->idle_since, memory_order_relaxed))
			atomic_store_explicit(&ctx->idle_since, 0,
					      memory_order_relaxed);
		return false;
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
	since = atomic_load_explicit(&ctx->idle_since, memory_order_relaxed);
	if (!since) {
		atomic_store_explicit(&ctx->idle_since, now ? now : 1,
				      memory_order_relaxed);
		return false;
	}
	return now - since >= ctx->poll_spin_ns;
}

static void rnic_cq_nap(struct rnic_context *ctx)
{
	struct timespec ts = {
		.tv_sec = ctx->poll_nap_ns / 1000000000ull,
		.tv_nsec = ctx->poll_nap_ns % 1000000000ull,
	};

	nanosleep(&ts, NULL);
}

/* Takes up to 'ne' completions; called with cq->lock held. */
static int rnic_cq_take(struct rnic_context *ctx, struct rnic_cq *cq, int ne,
			struct ibv_wc *wc)
{
	uint32_t start = cq->ci;
	int n = 0;

	while (n < ne && !rnic_cq_next_wc(ctx, cq, &wc[n]))
		n++;
	if (cq->ci != start)
		rnic_cq_publish_ci(cq);
	return n;
}

int rnic_poll_cq(struct ibv_cq *ibcq, int ne, struct ibv_wc *wc)
{
	struct rnic_context *ctx = to_rctx(ibcq->context);
	struct rnic_cq *cq = to_rcq(ibcq);
	bool nap;
	int n;

	pthread_spin_lock(&cq->lock);
	n = rnic_cq_take(ctx, cq, ne, wc);
	nap = ne > 0 && rnic_cq_poll_idle(ctx, cq, n > 0);
	pthread_spin_unlock(&cq->lock);
	if (!nap)
		return n;
	rnic_cq_nap(ctx);
	/*
	 * An empty answer must be true when the caller gets it, as a
	 * hardware poll's is, not only when the nap began: a program that
	 * reads "empty" and then acts on another event (libfabric's rxm
	 * tears a connection down on the peer's disconnect once its CQ
	 * reads empty) would lose a completion that came during the nap.
	 */
	pthread_spin_lock(&cq->lock);
	n = rnic_cq_take(ctx, cq, ne, wc);
	if (n)
		rnic_cq_poll_idle(ctx, cq, true);
	pthread_spin_unlock(&cq->lock);
	return n;
}

/*
 * Drops the CQEs of a QP just moved to RESET from 'cq', so that they do not
 * come back as completions of the work it is given next.  The survivors
 * slide towards the newest entry and the consumer index moves past the
 * freed slots; entries the device writes meanwhile lie beyond the scan.
 * A dropped receive of an SRQ frees its SRQ slot.
 */
void rnic_cq_clean(struct rnic_cq *cq, struct rnic_qp *qp)
{
	uint32_t mask = (1u << cq->log_size) - 1;
	uint32_t end, src, removed = 0;

	pthread_spin_lock(&cq->lock);
	for (end = cq->ci; end - cq->ci <= mask; end++) {
		uint8_t owner = *(volatile uint8_t *)&cq->cqes[end & mask].owner;

		if (!rnic_owner_is_new(owner, end, cq->log_size))
			break;
	}
	/* The bodies were written before the owner bytes. */
	udma_from_device_barrier();
	for (src = end; src-- != cq->ci;) {
		struct rnic_cqe *e = &cq->cqes[src & mask];
		enum ibv_wc_opcode op;
		uint64_t wr_id;
		bool recv;

		if ((le32toh(e->qpn) & RNIC_DB_QN_MASK) == qp->qpn) {
			if (qp->srq && rnic_wc_opcode(e->opcode, &op, &recv) &&
			    recv)
				rnic_wq_retire(&qp->srq->wq, le16toh(e->wqe_idx),
					       false, &wr_id, NULL);
			removed++;
		} else if (removed) {
			struct rnic_cqe *d = &cq->cqes[(src + removed) & mask];
			uint8_t owner = d->owner;

			memcpy(d, e, sizeof(*d));
			d->owner = owner;
		}
	}
	if (removed) {
		cq->ci += removed;
		rnic_cq_publish_ci(cq);
	}
	pthread_spin_unlock(&cq->lock);
}

/* ---- extended CQs: ibv_start_poll / ibv_next_poll / ibv_end_poll ---- */

static inline struct rnic_cq *cqx_to_rcq(struct ibv_cq_ex *cqx)
{
	return container_of(cqx, struct rnic_cq, vcq.cq_ex);
}

static void rnic_cqx_load(struct ibv_cq_ex *cqx, const struct ibv_wc *wc)
{
	cqx->wr_id = wc->wr_id;
	cqx->status = wc->status;
}

static int rnic_cqx_start_poll(struct ibv_cq_ex *cqx,
			       struct ibv_poll_cq_attr *attr)
{
	struct rnic_cq *cq = cqx_to_rcq(cqx);
	struct rnic_context *ctx = to_rctx(cqx->context);
	uint32_t start;
	int ret;

	if (attr->comp_mask)
		return EINVAL;
	pthread_spin_lock(&cq->lock);
	start = cq->ci;
	ret = rnic_cq_next_wc(ctx, cq, &cq->cur);
	if (ret) {
		/* No end_poll follows: give back what was dropped. */
		bool nap;

		if (cq->ci != start)
			rnic_cq_publish_ci(cq);
		nap = rnic_cq_poll_idle(ctx, cq, false);
		pthread_spin_unlock(&cq->lock);
		if (!nap)
			return ret;
		rnic_cq_nap(ctx);
		/* As in rnic_poll_cq: answer for the end of the nap. */
		pthread_spin_lock(&cq->lock);
		start = cq->ci;
		ret = rnic_cq_next_wc(ctx, cq, &cq->cur);
		if (ret) {
			if (cq->ci != start)
				rnic_cq_publish_ci(cq);
			pthread_spin_unlock(&cq->lock);
			return ret;
		}
	}
	rnic_cq_poll_idle(ctx, cq, true);
	rnic_cqx_load(cqx, &cq->cur);
	return 0;
}

static int rnic_cqx_next_poll(struct ibv_cq_ex *cqx)
{
	struct rnic_cq *cq = cqx_to_rcq(cqx);
	int ret;

	ret = rnic_cq_next_wc(to_rctx(cqx->context), cq, &cq->cur);
	if (!ret)
		rnic_cqx_load(cqx, &cq->cur);
	return ret;
}

static void rnic_cqx_end_poll(struct ibv_cq_ex *cqx)
{
	struct rnic_cq *cq = cqx_to_rcq(cqx);

	rnic_cq_publish_ci(cq);
	pthread_spin_unlock(&cq->lock);
}

/* One reader per field of the completion start/next_poll parsed. */
#define RNIC_CQX_READER(name, type, field)				\
	static type rnic_cqx_read_##name(struct ibv_cq_ex *cqx)		\
	{								\
		return cqx_to_rcq(cqx)->cur.field;			\
	}

RNIC_CQX_READER(opcode, enum ibv_wc_opcode, opcode)
RNIC_CQX_READER(vendor_err, uint32_t, vendor_err)
RNIC_CQX_READER(wc_flags, unsigned int, wc_flags)
RNIC_CQX_READER(byte_len, uint32_t, byte_len)
/* The immediate, or the invalidated rkey: they share the field. */
RNIC_CQX_READER(imm_data, __be32, imm_data)
RNIC_CQX_READER(qp_num, uint32_t, qp_num)
RNIC_CQX_READER(src_qp, uint32_t, src_qp)
RNIC_CQX_READER(slid, uint32_t, slid)
RNIC_CQX_READER(sl, uint8_t, sl)
RNIC_CQX_READER(dlid_path_bits, uint8_t, dlid_path_bits)

static uint64_t rnic_cqx_read_completion_ts(struct ibv_cq_ex *cqx)
{
	return cqx_to_rcq(cqx)->cur_ts;
}

/* The polling ops every extended CQ has, whatever fields it asked for. */
void rnic_cqx_init(struct rnic_cq *cq)
{
	struct ibv_cq_ex *cqx = &cq->vcq.cq_ex;

	cqx->start_poll = rnic_cqx_start_poll;
	cqx->next_poll = rnic_cqx_next_poll;
	cqx->end_poll = rnic_cqx_end_poll;
	cqx->read_opcode = rnic_cqx_read_opcode;
	cqx->read_vendor_err = rnic_cqx_read_vendor_err;
	cqx->read_wc_flags = rnic_cqx_read_wc_flags;
}

struct ibv_cq_ex *rnic_create_cq_ex(struct ibv_context *ibctx,
				    struct ibv_cq_init_attr_ex *attr)
{
	struct rnic_context *ctx = to_rctx(ibctx);
	struct rnic_create_cq_ex_resp resp = {};
	struct rnic_create_cq_ex_cmd cmd = {};
	struct rnic_pd *parent_domain = NULL;
	struct ibv_cq_ex *cqx;
	struct rnic_cq *cq;
	int ret;

	if (attr->comp_mask & ~(IBV_CQ_INIT_ATTR_MASK_FLAGS |
				IBV_CQ_INIT_ATTR_MASK_PD) ||
	    attr->wc_flags & ~rnic_cq_ex_wc_flags(ctx)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	/* A CQ has no protection domain: only a parent domain means something. */
	if (attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) {
		if (!attr->parent_domain ||
		    !to_rpd(attr->parent_domain)->protection_domain) {
			errno = EINVAL;
			return NULL;
		}
		parent_domain = to_rpd(attr->parent_domain);
	}
	/* Single-threaded use is only a hint; overrun ignoring is not ours. */
	if (attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS &&
	    attr->flags & ~IBV_CREATE_CQ_ATTR_SINGLE_THREADED) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	cq = rnic_cq_alloc(ctx, attr->cqe, parent_domain);
	if (!cq)
		return NULL;
	rnic_cq_fill_cmd(cq, &cmd.drv);
	ret = ibv_cmd_create_cq_ex(ibctx, attr, &cq->vcq, &cmd.ibv_cmd,
				   sizeof(cmd), &resp.ibv_resp, sizeof(resp),
				   0);
	if (ret)
		goto err;
	ret = rnic_cq_check_resp(ctx, cq, &resp.drv);
	if (ret) {
		ibv_cmd_destroy_cq(&cq->vcq.cq);
		goto err;
	}

	cqx = &cq->vcq.cq_ex;
	rnic_cqx_init(cq);
	if (attr->wc_flags & IBV_WC_EX_WITH_BYTE_LEN)
		cqx->read_byte_len = rnic_cqx_read_byte_len;
	if (attr->wc_flags & IBV_WC_EX_WITH_IMM)
		cqx->read_imm_data = rnic_cqx_read_imm_data;
	if (attr->wc_flags & IBV_WC_EX_WITH_QP_NUM)
		cqx->read_qp_num = rnic_cqx_read_qp_num;
	if (attr->wc_flags & IBV_WC_EX_WITH_SRC_QP)
		cqx->read_src_qp = rnic_cqx_read_src_qp;
	if (attr->wc_flags & IBV_WC_EX_WITH_SLID)
		cqx->read_slid = rnic_cqx_read_slid;
	if (attr->wc_flags & IBV_WC_EX_WITH_SL)
		cqx->read_sl = rnic_cqx_read_sl;
	if (attr->wc_flags & IBV_WC_EX_WITH_DLID_PATH_BITS)
		cqx->read_dlid_path_bits = rnic_cqx_read_dlid_path_bits;
	if (attr->wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP)
		cqx->read_completion_ts = rnic_cqx_read_completion_ts;
	return cqx;
err:
	rnic_cq_free(cq);
	errno = ret;
	return NULL;
}

int rnic_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct rnic_context *ctx = to_rctx(ibcq->context);
	struct rnic_cq *cq = to_rcq(ibcq);
	uint64_t val;

	pthread_spin_lock(&cq->lock);
	val = ((uint64_t)cq->cqn & RNIC_DB_QN_MASK) |
	      (solicited_only ? RNIC_DB_ARM_SOLICITED : RNIC_DB_ARM) |
	      ((uint64_t)cq->ci << 32);
	udma_to_device_barrier();
	mmio_write64_le((uint8_t *)ctx->db + RNIC_DB_CQ, htole64(val));
	pthread_spin_unlock(&cq->lock);
	return 0;
}
