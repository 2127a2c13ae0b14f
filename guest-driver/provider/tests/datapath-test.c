// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Host test of the provider's kernel-bypass data path: post_send,
 * post_recv, the ibv_wr_* API, poll_cq and req_notify_cq run against
 * rings in plain memory, with this test playing the device (reading WQEs
 * and doorbells, writing CQEs with owner bits).  No kernel is involved.
 *
 * Built against an rdma-core 56.1 build tree, see Makefile.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../rnic.h"

static int failures;

#define CHECK(cond)                                                       \
	do {                                                              \
		if (!(cond)) {                                            \
			fprintf(stderr, "%s:%d: FAILED: %s\n", __FILE__,  \
				__LINE__, #cond);                         \
			failures++;                                       \
		}                                                         \
	} while (0)

#define QPN 0x123

static struct rnic_context *ctx;
static struct rnic_cq *cq;
static struct rnic_qp *qp;
static uint32_t dev_cq_pi;		/* CQEs the fake device has written */
static uint64_t dev_ts;			/* and the timestamp it gives them */

static uint64_t db_read(unsigned int offset)
{
	uint64_t v;

	memcpy(&v, (uint8_t *)ctx->db + offset, sizeof(v));
	return le64toh(v);
}

static void dev_cqe(uint32_t qpn, uint16_t slot, uint8_t opcode,
		    uint8_t status, uint64_t wr_id)
{
	struct rnic_cqe *e = &cq->cqes[dev_cq_pi & ((1u << cq->log_size) - 1)];

	memset(e, 0, sizeof(*e));
	e->wr_id = htole64(wr_id);
	e->qpn = htole32(qpn);
	e->byte_len = htole32(64);
	e->wqe_idx = htole16(slot);
	e->opcode = opcode;
	e->status = status;
	e->timestamp = htole64(dev_ts);
	e->owner = !((dev_cq_pi >> cq->log_size) & 1);
	dev_cq_pi++;
}

static struct rnic_send_wqe *sq_slot(uint32_t slot)
{
	return rnic_wq_slot(&qp->sq, slot);
}

static void setup(void)
{
	ctx = calloc(1, sizeof(*ctx));
	if (posix_memalign(&ctx->db, 4096, 4096))
		abort();
	memset(ctx->db, 0, 4096);
	ctx->max_inline = RNIC_MAX_INLINE;
	ctx->max_sge = RNIC_SQ_MAX_SGE;
	ctx->max_recv_sge = RNIC_RQ_MAX_SGE;
	ctx->max_qp_wr = 1024;

	cq = calloc(1, sizeof(*cq));
	pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE);
	cq->vcq.cq.context = &ctx->ibv_ctx.context;
	cq->cqn = 7;
	cq->log_size = 3;		/* 8 CQEs, wraps quickly */
	cq->buf_size = 4096 + 4096;
	cq->buf = calloc(1, cq->buf_size);
	cq->dbrec = cq->buf;
	cq->cqes = (struct rnic_cqe *)((uint8_t *)cq->buf + 4096);
	rnic_cqx_init(cq);

	qp = calloc(1, sizeof(*qp));
	qp->vqp.qp.context = &ctx->ibv_ctx.context;
	qp->vqp.qp.qp_num = QPN;
	qp->qpn = QPN;
	qp->type = IBV_QPT_RC;
	qp->state = IBV_QPS_RTS;
	qp->send_cq = cq;
	qp->recv_cq = cq;
	qp->max_inline = 64;
	if (rnic_wq_init(&qp->sq, NULL, RNIC_RES_TYPE_SQ, 2, RNIC_SQ_WQE_SIZE,
			 2, 0) ||
	    rnic_wq_init(&qp->rq, NULL, RNIC_RES_TYPE_RQ, 2, RNIC_RQ_WQE_SIZE,
			 1, 0))
		abort();
	ctx->qp_table[0] = calloc(RNIC_QP_TABLE_SIZE, sizeof(*ctx->qp_table[0]));
	ctx->qp_table[0][QPN] = qp;
	rnic_qpx_init(qp, IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_SEND);
}

static void test_post_send(void)
{
	char buf[256];
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = 16,
			       .lkey = 0x1100 };
	struct ibv_send_wr wr[5], *bad = NULL;
	struct ibv_wc wc[4];
	int i, n;

	memset(buf, 0xab, sizeof(buf));
	memset(wr, 0, sizeof(wr));
	for (i = 0; i < 5; i++) {
		wr[i].wr_id = 100 + i;
		wr[i].opcode = IBV_WR_RDMA_WRITE;
		wr[i].sg_list = &sge;
		wr[i].num_sge = 1;
		wr[i].wr.rdma.rkey = 0x2200;
		wr[i].wr.rdma.remote_addr = 0x1000 + i;
		wr[i].next = i < 4 ? &wr[i + 1] : NULL;
	}
	wr[2].send_flags = IBV_SEND_SIGNALED;
	wr[1].send_flags = IBV_SEND_INLINE;

	/* Four fit in the 4-entry SQ, the fifth gets ENOMEM. */
	CHECK(rnic_post_send(&qp->vqp.qp, wr, &bad) == ENOMEM);
	CHECK(bad == &wr[4]);
	CHECK(db_read(RNIC_DB_SQ) == (QPN | (4ull << 32)));
	CHECK(le64toh(sq_slot(0)->wr_id) == 100);
	CHECK(sq_slot(0)->opcode == RNIC_WR_RDMA_WRITE);
	CHECK(sq_slot(0)->num_sge == 1);
	CHECK(le32toh(sq_slot(0)->rkey) == 0x2200);
	CHECK(le64toh(sq_slot(3)->remote_addr) == 0x1003);
	CHECK(sq_slot(2)->flags == RNIC_WQE_SIGNALED);
	CHECK(sq_slot(1)->flags == RNIC_WQE_INLINE);
	CHECK(sq_slot(1)->num_sge == 0 && le32toh(sq_slot(1)->inline_len) == 16);
	CHECK(((uint8_t *)sq_slot(1))[64] == 0xab);

	/* The device completes slot 2: slots 0..2 retire, one WC. */
	dev_cqe(QPN, 2, RNIC_WC_RDMA_WRITE, RNIC_WC_SUCCESS, 0);
	n = rnic_poll_cq(&cq->vcq.cq, 4, wc);
	CHECK(n == 1);
	CHECK(wc[0].wr_id == 102 && wc[0].status == IBV_WC_SUCCESS &&
	      wc[0].opcode == IBV_WC_RDMA_WRITE && wc[0].qp_num == QPN);
	CHECK(qp->sq.tail == 3);
	CHECK(le32toh(cq->dbrec->ci) == 1);

	/* A duplicate of slot 2, an unknown QPN and a bad opcode: dropped. */
	dev_cqe(QPN, 2, RNIC_WC_RDMA_WRITE, RNIC_WC_SUCCESS, 0);
	dev_cqe(QPN + 1, 3, RNIC_WC_RDMA_WRITE, RNIC_WC_SUCCESS, 0);
	dev_cqe(QPN, 3, 0x77, RNIC_WC_SUCCESS, 0);
	dev_cqe(QPN, 3, RNIC_WC_REG_MR, RNIC_WC_SUCCESS, 0);
	/* Slot 3 with a status beyond the table: clamped. */
	dev_cqe(QPN, 3, RNIC_WC_RDMA_WRITE, 200, 0);
	n = rnic_poll_cq(&cq->vcq.cq, 4, wc);
	CHECK(n == 1);
	CHECK(wc[0].wr_id == 103 && wc[0].status == IBV_WC_GENERAL_ERR);
	CHECK(qp->sq.tail == 4 && qp->sq.head == 4);
	CHECK(le32toh(cq->dbrec->ci) == 6);

	/* Nothing new. */
	CHECK(rnic_poll_cq(&cq->vcq.cq, 4, wc) == 0);

	/* Invalid requests: EINVAL, nothing posted, no doorbell. */
	wr[4].next = NULL;
	wr[4].num_sge = 3;
	CHECK(rnic_post_send(&qp->vqp.qp, &wr[4], &bad) == EINVAL);
	wr[4].num_sge = 1;
	wr[4].opcode = IBV_WR_BIND_MW;
	CHECK(rnic_post_send(&qp->vqp.qp, &wr[4], &bad) == EINVAL);
	wr[4].opcode = IBV_WR_SEND;
	wr[4].send_flags = IBV_SEND_INLINE;
	sge.length = 65;
	CHECK(rnic_post_send(&qp->vqp.qp, &wr[4], &bad) == EINVAL);
	CHECK(qp->sq.head == 4);
	CHECK(db_read(RNIC_DB_SQ) == (QPN | (4ull << 32)));
	sge.length = 16;
}

static void test_recv(void)
{
	char buf[64];
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = 64,
			       .lkey = 0x3300 };
	struct ibv_recv_wr wr[2], *bad = NULL;
	struct ibv_wc wc[2];
	int n;

	memset(wr, 0, sizeof(wr));
	wr[0].wr_id = 200;
	wr[0].sg_list = &sge;
	wr[0].num_sge = 1;
	wr[0].next = &wr[1];
	wr[1] = wr[0];
	wr[1].wr_id = 201;
	wr[1].next = NULL;
	CHECK(rnic_post_recv(&qp->vqp.qp, wr, &bad) == 0);
	CHECK(db_read(RNIC_DB_RQ) == (QPN | (2ull << 32)));

	/* Out of order: slot 1 before slot 0 is refused. */
	dev_cqe(QPN, 1, RNIC_WC_RECV, RNIC_WC_SUCCESS, 0);
	dev_cqe(QPN, 0, RNIC_WC_RECV, RNIC_WC_SUCCESS, 0);
	n = rnic_poll_cq(&cq->vcq.cq, 2, wc);
	CHECK(n == 1);
	CHECK(wc[0].wr_id == 200 && wc[0].opcode == IBV_WC_RECV &&
	      wc[0].byte_len == 64);
	dev_cqe(QPN, 1, RNIC_WC_RECV_RDMA_WITH_IMM, RNIC_WC_SUCCESS, 0);
	cq->cqes[(dev_cq_pi - 1) & 7].flags = RNIC_CQE_WITH_IMM;
	cq->cqes[(dev_cq_pi - 1) & 7].imm_inv = htobe32(0x11223344);
	n = rnic_poll_cq(&cq->vcq.cq, 2, wc);
	CHECK(n == 1);
	CHECK(wc[0].wr_id == 201 && (wc[0].wc_flags & IBV_WC_WITH_IMM) &&
	      be32toh(wc[0].imm_data) == 0x11223344);
}

/*
 * A receive with a GRH reports the packet's header type in sl, as
 * ConnectX does and UCX's UD transport needs: 2 for RoCE v2 over IPv4,
 * 1 over IPv6, 0 for RoCE v1; without a GRH, 0.
 */
static void test_recv_sl(void)
{
	static const struct { uint8_t net, flags, sl; } c[] = {
		{ RNIC_NET_IPV4, RNIC_CQE_GRH, 2 },
		{ RNIC_NET_IPV6, RNIC_CQE_GRH, 1 },
		{ RNIC_NET_ROCE_V1, RNIC_CQE_GRH, 0 },
		{ RNIC_NET_IPV4, 0, 0 },
	};
	char buf[64];
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = 64,
			       .lkey = 0x3300 };
	struct ibv_recv_wr wr = { .sg_list = &sge, .num_sge = 1 }, *bad;
	struct ibv_wc wc;
	unsigned int i;

	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		struct rnic_cqe *e;

		wr.wr_id = 400 + i;
		CHECK(rnic_post_recv(&qp->vqp.qp, &wr, &bad) == 0);
		dev_cqe(QPN, (uint16_t)(qp->rq.head - 1), RNIC_WC_RECV,
			RNIC_WC_SUCCESS, 0);
		e = &cq->cqes[(dev_cq_pi - 1) & ((1u << cq->log_size) - 1)];
		e->flags = c[i].flags;
		e->net_type = c[i].net;
		CHECK(rnic_poll_cq(&cq->vcq.cq, 1, &wc) == 1);
		CHECK(wc.wr_id == 400 + i && wc.sl == c[i].sl &&
		      !!(wc.wc_flags & IBV_WC_GRH) == !!c[i].flags);
	}
}

#define QPN_SRQ 0x124

static void srq_complete(uint32_t idx, uint64_t want_wr_id)
{
	struct ibv_wc wc;

	dev_cqe(QPN_SRQ, (uint16_t)idx, RNIC_WC_RECV, RNIC_WC_SUCCESS, 0);
	CHECK(rnic_poll_cq(&cq->vcq.cq, 1, &wc) == 1);
	CHECK(wc.wr_id == want_wr_id && wc.qp_num == QPN_SRQ);
}

/*
 * A receive a QP holds (its message waiting for a retransmission) does
 * not pin its SRQ ring slot: a completion of a later index shows the
 * device took it, so the slot is free while the receive's wr_id waits in
 * the shadow.  Only a receive still held 64K posts later blocks a post.
 */
static void test_srq_held(void)
{
	char buf[64];
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = 64,
			       .lkey = 0x3300 };
	struct ibv_recv_wr wr = { .sg_list = &sge, .num_sge = 1 }, *bad;
	struct rnic_srq *srq = calloc(1, sizeof(*srq));
	struct rnic_qp *q = calloc(1, sizeof(*q));
	struct ibv_srq *isrq = &srq->vsrq.srq;
	struct ibv_wc wc;
	uint32_t i;

	srq->vsrq.srq.context = &ctx->ibv_ctx.context;
	srq->srqn = 5;
	if (rnic_wq_init(&srq->wq, NULL, RNIC_RES_TYPE_SRQ, 3, RNIC_RQ_WQE_SIZE,
			 1, 0))
		abort();
	q->vqp.qp.context = &ctx->ibv_ctx.context;
	q->vqp.qp.qp_num = QPN_SRQ;
	q->qpn = QPN_SRQ;
	q->type = IBV_QPT_RC;
	q->state = IBV_QPS_RTS;
	q->send_cq = cq;
	q->recv_cq = cq;
	q->srq = srq;
	ctx->qp_table[0][QPN_SRQ] = q;

	/* An 8-slot ring, full, refuses a ninth before the device takes any. */
	for (i = 0; i < 8; i++) {
		wr.wr_id = 1000 + i;
		CHECK(rnic_post_srq_recv(isrq, &wr, &bad) == 0);
	}
	CHECK(db_read(RNIC_DB_SRQ) == (5 | (8ull << 32)));
	wr.wr_id = 1008;
	CHECK(rnic_post_srq_recv(isrq, &wr, &bad) == ENOMEM && bad == &wr);

	/* Index 0 is held; 1..7 complete. */
	for (i = 1; i < 8; i++)
		srq_complete(i, 1000 + i);
	/* All 8 slots are free, slot 0's too: the device took index 0. */
	for (i = 8; i < 16; i++) {
		wr.wr_id = 1000 + i;
		CHECK(rnic_post_srq_recv(isrq, &wr, &bad) == 0);
	}
	CHECK(db_read(RNIC_DB_SRQ) == (5 | (16ull << 32)));
	/* The late completion of index 0 names its own wr_id, not 1008's. */
	srq_complete(0, 1000);
	srq_complete(8, 1008);
	/* A second CQE for index 0 names nothing outstanding: dropped. */
	dev_cqe(QPN_SRQ, 0, RNIC_WC_RECV, RNIC_WC_SUCCESS, 0);
	CHECK(rnic_poll_cq(&cq->vcq.cq, 1, &wc) == 0);

	/* Index 9 stays held while 64K others are posted and complete. */
	for (i = 10; i < 16; i++)
		srq_complete(i, 1000 + i);
	for (i = 16; i < 9 + RNIC_SRQ_SHADOW; i++) {
		wr.wr_id = 1000 + i;
		if (rnic_post_srq_recv(isrq, &wr, &bad)) {
			CHECK(!"post refused");
			break;
		}
		srq_complete(i, 1000 + i);
	}
	/* Index 9 + 64K would share its shadow entry: refused, until 9 ends. */
	wr.wr_id = 2009;
	CHECK(rnic_post_srq_recv(isrq, &wr, &bad) == ENOMEM);
	srq_complete(9, 1009);
	CHECK(rnic_post_srq_recv(isrq, &wr, &bad) == 0);
	srq_complete(9 + RNIC_SRQ_SHADOW, 2009);

	ctx->qp_table[0][QPN_SRQ] = NULL;
	rnic_wq_destroy(&srq->wq);
	free(srq);
	free(q);
}

static void test_wr_api(void)
{
	struct ibv_qp_ex *qpx = &qp->vqp.qp_ex;
	char buf[8] = "inline!";
	struct ibv_wc wc[8];
	uint32_t head = qp->sq.head;

	qpx->wr_start(qpx);
	qpx->wr_id = 300;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	qpx->wr_rdma_write(qpx, 0x4400, 0x9000);
	qpx->wr_set_sge(qpx, 0x1100, 0x5000, 32);
	qpx->wr_id = 301;
	qpx->wr_flags = 0;
	qpx->wr_send(qpx);
	qpx->wr_set_inline_data(qpx, buf, sizeof(buf));
	CHECK(qpx->wr_complete(qpx) == 0);
	CHECK(qp->sq.head == head + 2);
	CHECK(db_read(RNIC_DB_SQ) == (QPN | ((uint64_t)(head + 2) << 32)));
	CHECK(sq_slot(head & 3)->opcode == RNIC_WR_RDMA_WRITE);
	CHECK(le32toh(sq_slot(head & 3)->rkey) == 0x4400);
	CHECK(sq_slot((head + 1) & 3)->flags == RNIC_WQE_INLINE);

	/* An error anywhere drops the whole batch. */
	qpx->wr_start(qpx);
	qpx->wr_send(qpx);
	qpx->wr_set_sge_list(qpx, 3, NULL);
	CHECK(qpx->wr_complete(qpx) == EINVAL);
	CHECK(qp->sq.head == head + 2);

	/* Retire both (slot of the second one completes them). */
	dev_cqe(QPN, (head + 1) & 3, RNIC_WC_SEND, RNIC_WC_SUCCESS, 0);
	CHECK(rnic_poll_cq(&cq->vcq.cq, 8, wc) == 1 && wc[0].wr_id == 301);
	CHECK(qp->sq.tail == qp->sq.head);
}

static void test_wrap(void)
{
	struct ibv_send_wr wr = {}, *bad;
	struct ibv_wc wc;
	int i;

	/* Many rounds through both the 4-entry SQ and the 8-entry CQ. */
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	for (i = 0; i < 1000; i++) {
		uint32_t slot = qp->sq.head & 3;

		wr.wr_id = 1000 + i;
		CHECK(rnic_post_send(&qp->vqp.qp, &wr, &bad) == 0);
		dev_cqe(QPN, slot, RNIC_WC_SEND, RNIC_WC_SUCCESS, 0);
		CHECK(rnic_poll_cq(&cq->vcq.cq, 1, &wc) == 1);
		CHECK(wc.wr_id == 1000 + (uint64_t)i);
	}
	CHECK(le32toh(cq->dbrec->ci) == dev_cq_pi);
}

static void test_notify(void)
{
	rnic_req_notify_cq(&cq->vcq.cq, 0);
	CHECK(db_read(RNIC_DB_CQ) ==
	      (7 | RNIC_DB_ARM | ((uint64_t)cq->ci << 32)));
	rnic_req_notify_cq(&cq->vcq.cq, 1);
	CHECK(db_read(RNIC_DB_CQ) ==
	      (7 | RNIC_DB_ARM_SOLICITED | ((uint64_t)cq->ci << 32)));
}

/* Posting in a state whose queue takes no work fails with EINVAL. */
static void test_state(void)
{
	struct ibv_qp_ex *qpx = &qp->vqp.qp_ex;
	struct ibv_send_wr swr = {}, *sbad = NULL;
	struct ibv_recv_wr rwr = {}, *rbad = NULL;
	struct ibv_wc wc[2];
	uint64_t sq_db = db_read(RNIC_DB_SQ), rq_db = db_read(RNIC_DB_RQ);
	uint32_t sq_head = qp->sq.head, rq_head = qp->rq.head;
	enum ibv_qp_state st;

	swr.opcode = IBV_WR_SEND;
	for (st = IBV_QPS_RESET; st <= IBV_QPS_RTR; st++) {
		qp->state = st;
		CHECK(rnic_post_send(&qp->vqp.qp, &swr, &sbad) == EINVAL);
		CHECK(sbad == &swr);
		qpx->wr_start(qpx);
		qpx->wr_send(qpx);
		qpx->wr_set_sge(qpx, 0x1100, 0x5000, 32);
		CHECK(qpx->wr_complete(qpx) == EINVAL);
	}
	qp->state = IBV_QPS_RESET;
	CHECK(rnic_post_recv(&qp->vqp.qp, &rwr, &rbad) == EINVAL);
	CHECK(rbad == &rwr);
	CHECK(qp->sq.head == sq_head && qp->rq.head == rq_head);
	CHECK(db_read(RNIC_DB_SQ) == sq_db && db_read(RNIC_DB_RQ) == rq_db);

	/* INIT and RTR take receives; ERR takes both (to flush them). */
	qp->state = IBV_QPS_INIT;
	CHECK(rnic_post_recv(&qp->vqp.qp, &rwr, &rbad) == 0);
	CHECK(qp->rq.head == rq_head + 1);
	qp->state = IBV_QPS_ERR;
	CHECK(rnic_post_send(&qp->vqp.qp, &swr, &sbad) == 0);
	CHECK(qp->sq.head == sq_head + 1);
	qp->state = IBV_QPS_RTS;

	/* Retire both so later cases start from empty queues. */
	dev_cqe(QPN, rq_head & 3, RNIC_WC_RECV, RNIC_WC_SUCCESS, 0);
	dev_cqe(QPN, sq_head & 3, RNIC_WC_SEND, RNIC_WC_SUCCESS, 0);
	CHECK(rnic_poll_cq(&cq->vcq.cq, 2, wc) == 2);
	CHECK(qp->sq.tail == qp->sq.head && qp->rq.tail == qp->rq.head);
}

/* A create asking for more inline data than a WQE holds is refused. */
static void test_inline_cap(void)
{
	struct ibv_qp_init_attr_ex attr = {};

	attr.comp_mask = IBV_QP_INIT_ATTR_PD;
	attr.send_cq = &cq->vcq.cq;
	attr.recv_cq = &cq->vcq.cq;
	attr.cap.max_send_wr = 4;
	attr.cap.max_recv_wr = 4;
	attr.cap.max_send_sge = 1;
	attr.cap.max_recv_sge = 1;

	attr.qp_type = IBV_QPT_RC;
	attr.cap.max_inline_data = RNIC_MAX_INLINE + 1;
	errno = 0;
	CHECK(!rnic_create_qp_ex(&ctx->ibv_ctx.context, &attr));
	CHECK(errno == EINVAL);
	CHECK(attr.cap.max_inline_data == RNIC_MAX_INLINE + 1);

	/* UD WQEs carry an address vector, leaving 128 bytes. */
	attr.qp_type = IBV_QPT_UD;
	attr.cap.max_inline_data = RNIC_SQ_WQE_SIZE - 128 + 1;
	errno = 0;
	CHECK(!rnic_create_qp_ex(&ctx->ibv_ctx.context, &attr));
	CHECK(errno == EINVAL);

	/* A device limit below the WQE room is the one that counts. */
	ctx->max_inline = 32;
	attr.qp_type = IBV_QPT_RC;
	attr.cap.max_inline_data = 33;
	errno = 0;
	CHECK(!rnic_create_qp_ex(&ctx->ibv_ctx.context, &attr));
	CHECK(errno == EINVAL);
	ctx->max_inline = RNIC_MAX_INLINE;
}

/*
 * rnic_cq_clean (modify_qp to RESET): the QP's unpolled CQEs go, the
 * others keep their order and are polled as before.
 */
static void test_cq_clean(void)
{
	struct rnic_qp other = { .qpn = QPN + 5 };
	struct ibv_wc wc[4];

	CHECK(rnic_poll_cq(&cq->vcq.cq, 4, wc) == 0);
	qp->sq.head = qp->sq.tail = 0;
	qp->sq.head = 1;
	dev_cqe(QPN, 0, RNIC_WC_SEND, RNIC_WC_WR_FLUSH_ERR, 0);
	dev_cqe(QPN + 1, 0, RNIC_WC_SEND, RNIC_WC_SUCCESS, 0);
	dev_cqe(QPN, 0, RNIC_WC_SEND, RNIC_WC_WR_FLUSH_ERR, 0);
	dev_cqe(QPN + 1, 1, RNIC_WC_SEND, RNIC_WC_SUCCESS, 0);
	rnic_cq_clean(cq, qp);
	CHECK(le32toh(cq->dbrec->ci) == cq->ci);
	CHECK(cq->ci == dev_cq_pi - 2);
	/* What is left names QP + 1 in order; it is unknown, so dropped. */
	CHECK(le32toh(cq->cqes[cq->ci & 7].qpn) == QPN + 1 &&
	      le16toh(cq->cqes[cq->ci & 7].wqe_idx) == 0);
	CHECK(le32toh(cq->cqes[(cq->ci + 1) & 7].qpn) == QPN + 1 &&
	      le16toh(cq->cqes[(cq->ci + 1) & 7].wqe_idx) == 1);
	CHECK(rnic_poll_cq(&cq->vcq.cq, 4, wc) == 0);
	CHECK(cq->ci == dev_cq_pi);
	/* No CQE of the QP: nothing moves. */
	dev_cqe(QPN + 1, 2, RNIC_WC_SEND, RNIC_WC_SUCCESS, 0);
	rnic_cq_clean(cq, &other);
	CHECK(cq->ci == dev_cq_pi - 1);
	rnic_cq_clean(cq, qp);
	CHECK(cq->ci == dev_cq_pi - 1);
	CHECK(rnic_poll_cq(&cq->vcq.cq, 4, wc) == 0);
	CHECK(cq->ci == dev_cq_pi);
	qp->sq.head = qp->sq.tail = 0;
}

/*
 * The device clock on the doorbell page, and each CQE's timestamp kept for
 * read_completion_ts; a completion made up for a dead CQ keeps the last
 * timestamp the device wrote.
 */
static void test_clock(void)
{
	struct ibv_values_ex v = { .comp_mask = IBV_VALUES_MASK_RAW_CLOCK };
	struct ibv_context *ibctx = &ctx->ibv_ctx.context;
	uint64_t now = 0x123456789abcull, le = htole64(now);
	struct ibv_wc wc[2];

	CHECK(rnic_query_rt_values(ibctx, &v) == EOPNOTSUPP);
	ctx->has_clock = true;
	memcpy((uint8_t *)ctx->db + RNIC_DB_CLOCK, &le, sizeof(le));
	CHECK(rnic_query_rt_values(ibctx, &v) == 0);
	CHECK(v.comp_mask == IBV_VALUES_MASK_RAW_CLOCK &&
	      v.raw_clock.tv_sec == 0 && v.raw_clock.tv_nsec == (long)now);
	v.comp_mask = 1u << 5;
	CHECK(rnic_query_rt_values(ibctx, &v) == EINVAL);
	v.comp_mask = 0;
	CHECK(rnic_query_rt_values(ibctx, &v) == 0 && v.comp_mask == 0);

	CHECK(rnic_poll_cq(&cq->vcq.cq, 2, wc) == 0);
	qp->sq.head = qp->sq.tail = 0;
	qp->sq.head = 2;
	dev_ts = now + 1;
	dev_cqe(QPN, 0, RNIC_WC_SEND, RNIC_WC_SUCCESS, 0);
	CHECK(rnic_poll_cq(&cq->vcq.cq, 2, wc) == 1 && cq->cur_ts == now + 1);
	dev_ts = now + 2;
	dev_cqe(QPN, 1, RNIC_WC_SEND, RNIC_WC_SUCCESS, 0);
	CHECK(rnic_poll_cq(&cq->vcq.cq, 2, wc) == 1 && cq->cur_ts == now + 2);
	qp->sq.wr_id[2] = 7;
	qp->sq.head = 3;
	cq->dbrec->state = htole32(RNIC_CQ_DBREC_DEAD);
	CHECK(rnic_poll_cq(&cq->vcq.cq, 2, wc) == 1 && wc[0].wr_id == 7 &&
	      wc[0].status == IBV_WC_WR_FLUSH_ERR && cq->cur_ts == now + 2);
	cq->dbrec->state = 0;
	qp->sq.head = qp->sq.tail = 0;
	ctx->has_clock = false;
	dev_ts = 0;
}

/*
 * A CQ the kernel marked dead (device removed or failed): CQEs already in
 * the ring come first, then every outstanding SQ and RQ WQE of the QPs on
 * the CQ completes as WR_FLUSH_ERR with its own wr_id, then nothing.
 */
static void test_dead_cq(void)
{
	struct ibv_wc wc[4];
	int n;

	CHECK(rnic_poll_cq(&cq->vcq.cq, 4, wc) == 0);
	qp->sq.head = qp->sq.tail = 4;
	qp->sq.wr_id[0] = 40;
	qp->sq.wr_id[1] = 41;
	qp->sq.head = 6;
	qp->rq.head = qp->rq.tail = 8;
	qp->rq.wr_id[0] = 80;
	qp->rq.head = 9;
	dev_cqe(QPN, 0, RNIC_WC_RDMA_WRITE, RNIC_WC_SUCCESS, 0);
	cq->dbrec->state = htole32(RNIC_CQ_DBREC_DEAD);
	n = rnic_poll_cq(&cq->vcq.cq, 4, wc);
	CHECK(n == 3);
	CHECK(wc[0].status == IBV_WC_SUCCESS && wc[0].wr_id == 40);
	CHECK(wc[1].status == IBV_WC_WR_FLUSH_ERR && wc[1].wr_id == 41 &&
	      wc[1].qp_num == QPN && wc[1].opcode == IBV_WC_SEND);
	CHECK(wc[2].status == IBV_WC_WR_FLUSH_ERR && wc[2].wr_id == 80 &&
	      wc[2].opcode == IBV_WC_RECV);
	CHECK(qp->sq.tail == qp->sq.head && qp->rq.tail == qp->rq.head);
	CHECK(rnic_poll_cq(&cq->vcq.cq, 4, wc) == 0);
	/* Work posted after the device went fails on the next poll. */
	qp->sq.wr_id[2] = 42;
	qp->sq.head = 7;
	CHECK(rnic_poll_cq(&cq->vcq.cq, 4, wc) == 1 && wc[0].wr_id == 42 &&
	      wc[0].status == IBV_WC_WR_FLUSH_ERR);
	cq->dbrec->state = 0;
	qp->sq.head = qp->sq.tail = 0;
	qp->rq.head = qp->rq.tail = 0;
}

/* ---- SQ doorbell records ---- */

#define DBREC_QPN 0x321

static struct rnic_qp *dbrec_qp(struct rnic_pd *pd)
{
	struct rnic_qp *q = calloc(1, sizeof(*q));

	q->vqp.qp.context = &ctx->ibv_ctx.context;
	q->vqp.qp.pd = &pd->ibv_pd;
	q->qpn = DBREC_QPN;
	q->type = IBV_QPT_RC;
	q->state = IBV_QPS_RTS;
	q->max_inline = 64;
	/* No RQ ring, but a reset takes its lock. */
	if (pthread_spin_init(&q->rq.lock, PTHREAD_PROCESS_PRIVATE) ||
	    rnic_qp_init_sq(ctx, q, NULL, 2, 1))
		abort();
	rnic_qpx_init(q, IBV_QP_EX_WITH_SEND);
	return q;
}

static void dbrec_qp_free(struct rnic_qp *q)
{
	rnic_wq_destroy(&q->sq);
	pthread_spin_destroy(&q->rq.lock);
	free(q);
}

static uint32_t dbrec_pi(struct rnic_qp *q)
{
	return le32toh(q->sq_dbrec->pi);
}

/* The device's side of the record: busy (no RING) or idle. */
static void dbrec_set_ring(struct rnic_qp *q, bool ring)
{
	q->sq_dbrec->flags = htole32(ring ? RNIC_SQ_DBREC_RING : 0);
}

/* Forget the last SQ doorbell, so that a new one shows; retire all. */
static void sq_db_clear(struct rnic_qp *q)
{
	memset((uint8_t *)ctx->db + RNIC_DB_SQ, 0, sizeof(uint64_t));
	q->sq.tail = q->sq.head;
}

static uint64_t sq_db_of(struct rnic_qp *q)
{
	return q->qpn | ((uint64_t)q->sq.head << 32);
}

/* Without the capability the SQ is what it always was. */
static void test_sq_dbrec_absent(void)
{
	struct rnic_pd pd = {};
	struct rnic_qp *q;

	ctx->caps = 0;
	q = dbrec_qp(&pd);
	CHECK(!q->sq_dbrec && q->sq.lead == 0);
	CHECK(q->sq.buf_size == RNIC_PAGE_SIZE);
	CHECK(rnic_wq_slot(&q->sq, 0) == q->sq.buf);
	dbrec_qp_free(q);
}

/*
 * post_send, the ibv_wr_* API and bind_mw store the producer index in the
 * record and ring only while the device has RING set; a reset starts the
 * record over.
 */
static void test_sq_dbrec(void)
{
	struct rnic_pd pd = {};
	struct ibv_mw mw = { .pd = &pd.ibv_pd, .type = IBV_MW_TYPE_1,
			     .rkey = 0x500 };
	struct ibv_mw_bind bind = {};
	struct ibv_send_wr wr = {}, *bad;
	struct ibv_qp_ex *qpx;
	struct rnic_qp *q;

	ctx->caps = RNIC_UCTX_CAP_SQ_DBREC;
	q = dbrec_qp(&pd);
	qpx = &q->vqp.qp_ex;
	/* One record page, then the 4 WQEs; idle and empty to begin with. */
	CHECK(q->sq_dbrec == q->sq.buf);
	CHECK(q->sq.lead == RNIC_SQ_DBREC_PAGE_SIZE);
	CHECK(q->sq.buf_size == RNIC_SQ_DBREC_PAGE_SIZE + RNIC_PAGE_SIZE);
	CHECK((uint8_t *)rnic_wq_slot(&q->sq, 0) ==
	      (uint8_t *)q->sq.buf + RNIC_SQ_DBREC_PAGE_SIZE);
	CHECK(dbrec_pi(q) == 0 &&
	      le32toh(q->sq_dbrec->flags) == RNIC_SQ_DBREC_RING);

	/* Idle device: the doorbell, and pi for when it turns busy. */
	wr.opcode = IBV_WR_SEND;
	wr.wr_id = 500;
	sq_db_clear(q);
	CHECK(rnic_post_send(&q->vqp.qp, &wr, &bad) == 0);
	CHECK(db_read(RNIC_DB_SQ) == sq_db_of(q));
	CHECK(dbrec_pi(q) == 1);
	CHECK(((struct rnic_send_wqe *)rnic_wq_slot(&q->sq, 0))->opcode ==
	      RNIC_WR_SEND);

	/* Busy device: pi only, whichever path posts. */
	dbrec_set_ring(q, false);
	sq_db_clear(q);
	CHECK(rnic_post_send(&q->vqp.qp, &wr, &bad) == 0);
	CHECK(dbrec_pi(q) == 2);
	qpx->wr_start(qpx);
	qpx->wr_send(qpx);
	qpx->wr_set_sge(qpx, 0x1100, 0x5000, 32);
	CHECK(qpx->wr_complete(qpx) == 0);
	CHECK(dbrec_pi(q) == 3);
	CHECK(rnic_bind_mw(&q->vqp.qp, &mw, &bind) == 0);
	CHECK(dbrec_pi(q) == 4);
	CHECK(db_read(RNIC_DB_SQ) == 0);

	/* Idle again: each path rings. */
	dbrec_set_ring(q, true);
	sq_db_clear(q);
	qpx->wr_start(qpx);
	qpx->wr_send(qpx);
	qpx->wr_set_sge(qpx, 0x1100, 0x5000, 32);
	CHECK(qpx->wr_complete(qpx) == 0);
	CHECK(db_read(RNIC_DB_SQ) == sq_db_of(q) && dbrec_pi(q) == 5);
	sq_db_clear(q);
	CHECK(rnic_bind_mw(&q->vqp.qp, &mw, &bind) == 0);
	CHECK(db_read(RNIC_DB_SQ) == sq_db_of(q) && dbrec_pi(q) == 6);

	/* Nothing posted: neither pi nor the doorbell moves. */
	sq_db_clear(q);
	wr.num_sge = 3;
	CHECK(rnic_post_send(&q->vqp.qp, &wr, &bad) == EINVAL);
	CHECK(dbrec_pi(q) == 6 && db_read(RNIC_DB_SQ) == 0);

	/* RESET: the device rewrites the record; pi follows head to 0. */
	rnic_qp_set_state(q, IBV_QPS_RESET);
	CHECK(q->sq.head == 0 && dbrec_pi(q) == 0);

	dbrec_qp_free(q);
	ctx->caps = 0;
}

/* ---- parent domains: where ring memory comes from ---- */

static struct {
	int allocs, frees;
	size_t size, alignment;
	uint64_t type;
	void *pd_context;
	void *ret;		/* what the allocator answers; NULL: real memory */
	void *last;
} pa;

static void *pd_alloc(struct ibv_pd *pd, void *pd_context, size_t size,
		      size_t alignment, uint64_t type)
{
	void *p;

	pa.allocs++;
	pa.size = size;
	pa.alignment = alignment;
	pa.type = type;
	pa.pd_context = pd_context;
	if (pa.ret)
		return pa.ret;
	if (posix_memalign(&p, alignment, size))
		return NULL;
	memset(p, 0xa5, size);		/* the ring must come back zeroed */
	pa.last = p;
	return p;
}

static void pd_free(struct ibv_pd *pd, void *pd_context, void *ptr,
		    uint64_t type)
{
	pa.frees++;
	CHECK(type == pa.type);
	if (ptr != pa.ret)
		free(ptr);
}

static void test_parent_domain(void)
{
	struct rnic_pd base = { .ibv_pd.context = &ctx->ibv_ctx.context };
	struct ibv_parent_domain_init_attr attr = {
		.pd = &base.ibv_pd,
		.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
			     IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT,
		.alloc = pd_alloc,
		.free = pd_free,
		.pd_context = &pa,
	};
	struct ibv_context *ibctx = &ctx->ibv_ctx.context;
	struct ibv_pd *parent, *nested;
	struct rnic_wq wq;
	static char odd[8192];
	size_t i;

	atomic_init(&base.refcount, 1);
	base.ibv_pd.handle = 42;
	parent = rnic_alloc_parent_domain(ibctx, &attr);
	CHECK(parent && parent->handle == 42);
	CHECK(rnic_pd_base(parent) == &base);
	/* A parent domain over a parent domain, a thread domain: refused. */
	attr.pd = parent;
	nested = rnic_alloc_parent_domain(ibctx, &attr);
	CHECK(!nested && errno == EINVAL);
	attr.pd = &base.ibv_pd;
	attr.td = (struct ibv_td *)&odd;
	nested = rnic_alloc_parent_domain(ibctx, &attr);
	CHECK(!nested && errno == EOPNOTSUPP);
	attr.td = NULL;
	/* The protection domain is held by its parent domain. */
	CHECK(rnic_dealloc_pd(&base.ibv_pd) == EBUSY);

	/* The allocator gives the SQ ring, page aligned, zeroed. */
	CHECK(rnic_wq_init(&wq, parent, RNIC_RES_TYPE_SQ, 3,
			   RNIC_SQ_WQE_SIZE, 1, 0) == 0);
	CHECK(pa.allocs == 1 && pa.type == RNIC_RES_TYPE_SQ);
	CHECK(pa.size == wq.buf_size && pa.size % 4096 == 0 &&
	      pa.size >= 8 * RNIC_SQ_WQE_SIZE && pa.alignment == 4096);
	CHECK(pa.pd_context == &pa && wq.buf == pa.last);
	for (i = 0; i < wq.buf_size && !((uint8_t *)wq.buf)[i]; i++)
		;
	CHECK(i == wq.buf_size);
	/* While the WQ lives, the parent domain cannot go. */
	CHECK(rnic_dealloc_pd(parent) == EBUSY);
	rnic_wq_destroy(&wq);
	CHECK(pa.frees == 1);

	/* "Use the default" is our own memory; NULL is out of memory. */
	pa.ret = IBV_ALLOCATOR_USE_DEFAULT;
	CHECK(rnic_wq_init(&wq, parent, RNIC_RES_TYPE_RQ, 2,
			   RNIC_RQ_WQE_SIZE, 1, 0) == 0);
	CHECK(pa.allocs == 2 && !wq.buf_owner);
	rnic_wq_destroy(&wq);
	CHECK(pa.frees == 1);
	pa.ret = odd + 1;		/* not page aligned: given back */
	CHECK(rnic_wq_init(&wq, parent, RNIC_RES_TYPE_RQ, 2,
			   RNIC_RQ_WQE_SIZE, 1, 0) == EINVAL);
	CHECK(pa.frees == 2);
	pa.ret = NULL;
	pa.last = NULL;

	CHECK(rnic_dealloc_pd(parent) == 0);
	CHECK(atomic_load(&base.refcount) == 1);
}

/* ---- empty polls nap once they have gone on for poll_spin_ns ---- */

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000ull + ts.tv_nsec / 1000000;
}

/* How long one poll took, in ms; *n gets what it returned. */
static uint64_t timed_poll(int *n)
{
	struct ibv_wc wc[2];
	uint64_t t0 = mono_ms();

	*n = rnic_poll_cq(&cq->vcq.cq, 2, wc);
	return mono_ms() - t0;
}

static void *late_cqe(void *slot)
{
	usleep(100 * 1000);
	dev_cqe(QPN, (uint16_t)(uintptr_t)slot, RNIC_WC_SEND, RNIC_WC_SUCCESS,
		0);
	return NULL;
}

/*
 * One poll, plain or through ibv_start_poll, while the fake device writes
 * a send CQE for the next SQ slot during it; how long the poll took, in
 * ms, and *n what it returned, checking the wr_id it names.
 */
static uint64_t late_cqe_poll(bool ex, int *n)
{
	uintptr_t slot = qp->sq.head - 1;
	uint64_t want = qp->sq.wr_id[slot], t0, took;
	struct ibv_poll_cq_attr attr = {};
	struct ibv_wc wc[2] = {};
	pthread_t dev;

	if (pthread_create(&dev, NULL, late_cqe, (void *)slot))
		abort();
	t0 = mono_ms();
	if (!ex) {
		*n = rnic_poll_cq(&cq->vcq.cq, 2, wc);
	} else {
		*n = !cq->vcq.cq_ex.start_poll(&cq->vcq.cq_ex, &attr);
		if (*n) {
			wc[0].wr_id = cq->vcq.cq_ex.wr_id;
			cq->vcq.cq_ex.end_poll(&cq->vcq.cq_ex);
		}
	}
	took = mono_ms() - t0;
	pthread_join(dev, NULL);
	CHECK(*n != 1 || wc[0].wr_id == want);
	return took;
}

static void test_poll_nap(void)
{
	int n;

	/* Spin 100 ms, then nap 300 ms: slow hosts cannot blur the two. */
	ctx->poll_spin_ns = 100 * 1000000ull;
	ctx->poll_nap_ns = 300 * 1000000ull;
	CHECK(timed_poll(&n) < 250 && n == 0);	/* the empty run starts */
	CHECK(timed_poll(&n) < 250 && n == 0);
	usleep(120 * 1000);
	CHECK(timed_poll(&n) >= 300 && n == 0);	/* spun long enough: naps */
	CHECK(timed_poll(&n) >= 300 && n == 0);

	/* A completion ends the run: the empty polls after it spin again. */
	qp->sq.head = qp->sq.tail = 0;
	qp->sq.wr_id[0] = 50;
	qp->sq.head = 1;
	dev_cqe(QPN, 0, RNIC_WC_SEND, RNIC_WC_SUCCESS, 0);
	CHECK(timed_poll(&n) < 250 && n == 1);
	CHECK(timed_poll(&n) < 250 && n == 0);
	CHECK(timed_poll(&n) < 250 && n == 0);

	/*
	 * A send completion that leaves a deep backlog behind it makes the
	 * next empty poll nap at once, without the spin; one that leaves a
	 * shallow backlog does not.
	 */
	ctx->poll_backlog = 4;
	qp->sq.head = qp->sq.tail = 0;
	qp->sq.wr_id[0] = 51;
	qp->sq.head = 6;			/* five left after slot 0 */
	dev_cqe(QPN, 0, RNIC_WC_SEND, RNIC_WC_SUCCESS, 0);
	CHECK(timed_poll(&n) < 250 && n == 1);
	CHECK(cq->sq_backlog == 5);
	CHECK(timed_poll(&n) >= 300 && n == 0);	/* no spin first */
	qp->sq.wr_id[3] = 52;
	dev_cqe(QPN, 3, RNIC_WC_SEND, RNIC_WC_SUCCESS, 0);
	CHECK(timed_poll(&n) < 250 && n == 1);	/* retires 1..3: two left */
	CHECK(cq->sq_backlog == 2);
	CHECK(timed_poll(&n) < 250 && n == 0);	/* spins again */
	ctx->poll_backlog = 0;			/* RNIC_POLL_BACKLOG=0 */
	qp->sq.wr_id[5] = 53;
	qp->sq.head = 12;
	dev_cqe(QPN, 5, RNIC_WC_SEND, RNIC_WC_SUCCESS, 0);
	CHECK(timed_poll(&n) < 250 && n == 1 && cq->sq_backlog == 6);
	CHECK(timed_poll(&n) < 250 && n == 0);
	cq->sq_backlog = 0;

	/*
	 * A completion that comes during the nap is returned by that poll:
	 * "empty" must still hold when the caller hears it.  The fake device
	 * writes 100 ms into a 300 ms nap; both start polls (plain and
	 * extended) must see it.
	 */
	usleep(120 * 1000);
	CHECK(timed_poll(&n) >= 300 && n == 0);	/* napping again */
	qp->sq.head = qp->sq.tail = 0;
	qp->sq.wr_id[0] = 54;
	qp->sq.head = 1;
	CHECK(late_cqe_poll(false, &n) >= 300 && n == 1);
	qp->sq.wr_id[1] = 55;
	qp->sq.head = 2;
	CHECK(timed_poll(&n) < 250 && n == 0);	/* the run starts again */
	usleep(120 * 1000);
	CHECK(late_cqe_poll(true, &n) >= 300 && n == 1);
	CHECK(qp->sq.tail == 2);

	/* A nap of 0 (RNIC_POLL_NAP_US=0) spins for ever. */
	ctx->poll_nap_ns = 0;
	usleep(120 * 1000);
	CHECK(timed_poll(&n) < 250 && n == 0);
	ctx->poll_spin_ns = 0;
	atomic_store(&ctx->idle_since, 0);
	qp->sq.head = qp->sq.tail = 0;
}

int main(void)
{
	setup();
	test_post_send();
	test_recv();
	test_recv_sl();
	test_srq_held();
	test_wr_api();
	test_wrap();
	test_notify();
	test_state();
	test_inline_cap();
	test_cq_clean();
	test_clock();
	test_dead_cq();
	test_sq_dbrec_absent();
	test_sq_dbrec();
	test_parent_domain();
	test_poll_nap();
	if (failures) {
		fprintf(stderr, "datapath-test: %d failure(s)\n", failures);
		return EXIT_FAILURE;
	}
	printf("datapath-test: OK\n");
	return EXIT_SUCCESS;
}
