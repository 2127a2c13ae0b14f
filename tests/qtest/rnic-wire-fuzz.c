/*
 * rnic wire fuzzing: the device under fuzz and the frames (see
 * rnic-wire-fuzz.h).
 *
 * Copyright (c) 2026 rnic developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "libqtest.h"
#include "libqos/qgraph.h"
#include "libqos/pci.h"
#include "libqos/rnic.h"
#include "rnic-wire-fuzz.h"

#ifndef _WIN32

uint32_t fz_rand(Fz *f)
{
    /* xorshift64*: enough to spread mutations, and reproducible. */
    f->rng ^= f->rng >> 12;
    f->rng ^= f->rng << 25;
    f->rng ^= f->rng >> 27;
    return (f->rng * 0x2545f4914f6cdd1dull) >> 32;
}

uint32_t fz_below(Fz *f, uint32_t n)
{
    return n ? fz_rand(f) % n : 0;
}

static void fz_post_recvs(Fz *f, QRnicQp *qp, unsigned n)
{
    struct rnic_sge sge = {
        .length = cpu_to_le32(1024),
        .lkey = cpu_to_le32(f->mr_lkey),
    };
    unsigned i;

    /* All inside the guarded MR: 23 * 128 + 1024 < 4096. */
    for (i = 0; i < n; i++) {
        sge.addr = cpu_to_le64(f->mr_va + (i % 24) * 128);
        qrnic_post_recv(f->e.r, qp, 0x1000 + i, &sge, 1);
    }
    qrnic_ring_rq(f->e.r, qp);
}

/* An RC QP that allows everything and has receives posted. */
static void fz_rc_up(Fz *f)
{
    struct rnic_qp_attr a;

    rt_env_rc_qp(&f->e, RNIC_QPS_RTS);
    rt_attr_for(&a, RNIC_QPS_RTS);
    a.access_flags = cpu_to_le32(RNIC_ACCESS_REMOTE_WRITE |
                                 RNIC_ACCESS_REMOTE_READ |
                                 RNIC_ACCESS_REMOTE_ATOMIC);
    g_assert_cmpuint(qrnic_modify_qp(f->e.r, f->e.qp.qpn,
                                     RNIC_QP_ATTR_ACCESS_FLAGS, &a),
                     ==, RNIC_CMD_OK);
    fz_post_recvs(f, &f->e.qp, 24);
}

static void fz_ud_up(Fz *f)
{
    struct rnic_qp_attr a;

    g_assert_cmpuint(qrnic_create_qp(f->e.r, &f->ud, RNIC_QPT_UD, f->e.pdn,
                                     f->e.cq.cqn, f->e.cq.cqn, 4, 5),
                     ==, RNIC_CMD_OK);
    rt_attr_for(&a, RNIC_QPS_INIT);
    a.qkey = cpu_to_le32(UD_QKEY);
    g_assert_cmpuint(qrnic_modify_qp(f->e.r, f->ud.qpn, RNIC_QP_ATTR_STATE |
                                     RNIC_QP_ATTR_PKEY_INDEX |
                                     RNIC_QP_ATTR_QKEY | RNIC_QP_ATTR_PORT,
                                     &a), ==, RNIC_CMD_OK);
    rt_attr_for(&a, RNIC_QPS_RTR);
    g_assert_cmpuint(qrnic_modify_qp(f->e.r, f->ud.qpn, RNIC_QP_ATTR_STATE,
                                     &a), ==, RNIC_CMD_OK);
    rt_attr_for(&a, RNIC_QPS_RTS);
    g_assert_cmpuint(qrnic_modify_qp(f->e.r, f->ud.qpn, RNIC_QP_ATTR_STATE |
                                     RNIC_QP_ATTR_SQ_PSN, &a),
                     ==, RNIC_CMD_OK);
    fz_post_recvs(f, &f->ud, 24);
}

void fz_setup(Fz *f, void *obj, void *data)
{
    uint8_t guard[QRNIC_PAGE];
    struct rnic_cmd cmd;
    uint32_t out[6];

    rt_env_basic(&f->e, obj, data);
    f->qts = qrnic_qts(f->e.r);
    f->region = qrnic_alloc(f->e.r, 3 * QRNIC_PAGE);
    f->mr_va = f->region + QRNIC_PAGE;
    memset(guard, GUARD_BYTE, sizeof(guard));
    qtest_memwrite(f->qts, f->region, guard, sizeof(guard));
    qtest_memwrite(f->qts, f->region + 2 * QRNIC_PAGE, guard, sizeof(guard));

    qrnic_cmd_init(&cmd, RNIC_CMD_REG_MR);
    cmd.u.reg_mr.pdn = cpu_to_le32(f->e.pdn);
    cmd.u.reg_mr.access = cpu_to_le32(RNIC_ACCESS_LOCAL_WRITE |
                                      RNIC_ACCESS_REMOTE_WRITE |
                                      RNIC_ACCESS_REMOTE_READ |
                                      RNIC_ACCESS_REMOTE_ATOMIC |
                                      RNIC_ACCESS_FLUSH_GLOBAL |
                                      RNIC_ACCESS_FLUSH_PERSISTENT);
    cmd.u.reg_mr.iova = cpu_to_le64(f->mr_va);
    cmd.u.reg_mr.length = cpu_to_le64(QRNIC_PAGE);
    cmd.u.reg_mr.pages.addr = cpu_to_le64(f->mr_va);
    cmd.u.reg_mr.pages.npages = cpu_to_le32(1);
    cmd.u.reg_mr.pages.page_shift = 12;
    g_assert_cmpuint(qrnic_cmd(f->e.r, &cmd, out), ==, RNIC_CMD_OK);
    f->mr_lkey = out[RNIC_OUT_LKEY];
    f->mr_rkey = out[RNIC_OUT_RKEY];
    fz_rc_up(f);
    fz_ud_up(f);
}

/*
 * Transport headers and payload of a frame that would be valid, or nearly
 * (one of the opcodes, with the fields that opcode needs), into @b.
 */
size_t fz_template(Fz *f, uint8_t *b)
{
    static const uint8_t opcodes[] = {
        0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a,
        0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10, 0x11, 0x12, 0x13, 0x14, 0x16,
        0x17, 0x1c, 0x1d, 0x24, 0x2a, 0x64, 0x65, 0x15, 0x18, 0x81, 0xe0,
    };
    uint8_t opc = opcodes[fz_below(f, ARRAY_SIZE(opcodes))];
    uint32_t dqpn, psn, plen;
    bool ud = (opc & 0xe0) == 0x60;
    size_t n = BTH_LEN;
    uint8_t *p;

    switch (fz_below(f, 8)) {
    case 0:
        dqpn = 1;                       /* GSI */
        break;
    case 1:
        dqpn = fz_rand(f) & 0xffffff;
        break;
    default:
        dqpn = ud ? f->ud.qpn : f->e.qp.qpn;
        break;
    }
    /* Around what the QP expects, sometimes anywhere. */
    psn = fz_below(f, 4) ? QP_RQ_PSN + fz_below(f, 8) - 2 :
                           fz_rand(f) & 0xffffff;
    plen = fz_below(f, 3) ? fz_below(f, 64) : fz_below(f, 1100);

    memset(b, 0, BTH_LEN);
    b[0] = opc;
    stw_be_p(b + 2, 0xffff);
    stl_be_p(b + 4, dqpn);
    stl_be_p(b + 8, psn | (fz_below(f, 2) ? 0x80000000u : 0));
    p = b + BTH_LEN;
    if (ud) {
        stl_be_p(p, fz_below(f, 4) ? UD_QKEY : fz_rand(f));
        stl_be_p(p + 4, PEER_QPN);
        p += 8;
    }
    if (opc == 0x1c) {
        stl_be_p(p, fz_below(f, 16) | fz_below(f, 4) << 4);    /* FETH */
        p += 4;
    }
    if (opc == 0x06 || opc == 0x0a || opc == 0x0b || opc == 0x0c ||
        opc == 0x1c || opc == 0x1d || opc == 0x26 || opc == 0x2a) {
        /* RETH into (or just past) the live MR. */
        stq_be_p(p, f->mr_va + fz_below(f, QRNIC_PAGE + 64) - 32);
        stl_be_p(p + 8, fz_below(f, 8) ? f->mr_rkey : fz_rand(f));
        stl_be_p(p + 12, opc == 0x1d ? 8 : fz_below(f, 8) ? plen :
                                             fz_rand(f));
        p += 16;
    }
    if (opc == 0x13 || opc == 0x14) {
        stq_be_p(p, f->mr_va + (fz_below(f, QRNIC_PAGE / 8 + 2) * 8) - 8);
        stl_be_p(p + 8, f->mr_rkey);
        stq_be_p(p + 12, fz_rand(f));
        stq_be_p(p + 20, fz_rand(f));
        p += 28;
        plen = 0;
    }
    if (opc >= 0x0d && opc <= 0x12) {
        p[0] = fz_below(f, 2) ? 0 : fz_rand(f);    /* AETH */
        p += 4;
        if (opc == 0x12) {
            p += 8;
        }
    }
    if (opc == 0x03 || opc == 0x05 || opc == 0x09 || opc == 0x0b ||
        opc == 0x65) {
        p += 4;                                     /* ImmDt */
    }
    if (opc == 0x16 || opc == 0x17) {
        stl_be_p(p, f->mr_rkey);                    /* IETH */
        p += 4;
    }
    if (opc == 0x1d) {
        plen = 8;
    }
    n = p - b;
    memset(p, 0x5a, plen);
    n += plen;
    b[1] = ((4 - (plen & 3)) & 3) << 4;             /* pad count */
    return n + ((4 - (plen & 3)) & 3);
}

/* Mutate the frame in @b (@n bytes, room for FZ_MAX_FRAME). */
size_t fz_mutate(Fz *f, uint8_t *b, size_t n)
{
    unsigned k, rounds = fz_below(f, 4);

    for (k = 0; k < rounds; k++) {
        switch (fz_below(f, 7)) {
        case 0:                         /* flip bits in the headers */
            b[fz_below(f, MIN(n, 48))] ^= 1u << fz_below(f, 8);
            break;
        case 1:                         /* any byte anywhere */
            b[fz_below(f, n)] = fz_rand(f);
            break;
        case 2:                         /* the opcode */
            b[0] = fz_rand(f);
            break;
        case 3:                         /* the PSN, near a wrap */
            stl_be_p(b + 8, (ldl_be_p(b + 8) & 0x80000000u) |
                     (0xffffff - fz_below(f, 4)));
            break;
        case 4:                         /* shorter */
            n = BTH_LEN - 4 + fz_below(f, n);
            break;
        case 5:                         /* longer */
            if (n < FZ_MAX_FRAME - 64) {
                memset(b + n, fz_rand(f), 64);
                n += fz_below(f, 64);
            }
            break;
        default:                        /* the pad count */
            b[1] = (b[1] & 0xcf) | (fz_below(f, 4) << 4);
            break;
        }
    }
    return n;
}

/* Take what the device sent and completed, and refill what it used. */
/* Takes every frame the device has sent so far. */
static void fz_drain(Fz *f)
{
    uint8_t buf[2048];

    while (rt_sock_recv(f->e.fd, buf, sizeof(buf), 0) > 0) {
        /* The device's answers: ACKs, NAKs, read responses. */
    }
}

/* Destroys @qp and gives its rings back: a long campaign must not leak. */
static void fz_qp_drop(Fz *f, QRnicQp *qp)
{
    g_assert_cmpuint(qrnic_destroy(f->e.r, RNIC_CMD_DESTROY_QP, 0, qp->qpn),
                     ==, RNIC_CMD_OK);
    guest_free(f->e.r->alloc, qp->sq_buf);
    guest_free(f->e.r->alloc, qp->rq_buf);
}

void fz_cleanup(Fz *f)
{
    struct rnic_cqe cqe;
    unsigned ncqe = 0;

    qrnic_settle(f->e.r);
    fz_drain(f);
    while (qrnic_cq_poll(f->e.r, &f->e.cq, &cqe)) {
        ncqe++;
    }
    /* A QP the fuzz broke starts again: the test is about surviving. */
    if (rt_qp_state(&f->e, &f->e.qp) != RNIC_QPS_RTS || ncqe) {
        fz_qp_drop(f, &f->e.qp);
        fz_rc_up(f);
    }
    if (rt_qp_state(&f->e, &f->ud) != RNIC_QPS_RTS || ncqe) {
        fz_qp_drop(f, &f->ud);
        fz_ud_up(f);
    }
    /* Nothing a peer sends may take the whole device down. */
    g_assert_cmphex(qrnic_readl(f->e.r, RNIC_REG_STATUS) & RNIC_STATUS_FATAL,
                    ==, 0);
}

void fz_check_guards(Fz *f)
{
    uint8_t got[QRNIC_PAGE], want[QRNIC_PAGE];

    memset(want, GUARD_BYTE, sizeof(want));
    qtest_memread(f->qts, f->region, got, sizeof(got));
    g_assert_cmpmem(got, sizeof(got), want, sizeof(want));
    qtest_memread(f->qts, f->region + 2 * QRNIC_PAGE, got, sizeof(got));
    g_assert_cmpmem(got, sizeof(got), want, sizeof(want));
}

/*
 * Writes without blocking: in the in-process fuzzer nothing reads the
 * other end while we write, so a full socket means running the main loop
 * (and taking the device's answers, which it may wait to send) first.
 * A device that never reads again is a finding.
 */
static void fz_write(Fz *f, const uint8_t *p, size_t len)
{
    int64_t deadline = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;

    while (len) {
        ssize_t n = send(f->e.fd, p, len, MSG_DONTWAIT);

        if (n > 0) {
            p += n;
            len -= n;
            continue;
        }
        g_assert(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
        g_assert(g_get_monotonic_time() < deadline);
        if (qrnic_wait_hook) {
            qrnic_wait_hook(f->qts);
        } else {
            g_usleep(1000);
        }
        fz_drain(f);
    }
}

void fz_send(Fz *f, const uint8_t *raw, size_t n, bool good)
{
    uint8_t frame[FZ_MAX_FRAME + 128];
    size_t len = rt_roce_raw(raw, n, good, frame, sizeof(frame));
    uint32_t be_len = htonl(len);

    /* The socket netdev's framing: a big-endian length, then the frame. */
    fz_write(f, (const uint8_t *)&be_len, sizeof(be_len));
    fz_write(f, frame, len);
    f->sent++;
    f->good_icrc += good;
}

#endif /* _WIN32 */
