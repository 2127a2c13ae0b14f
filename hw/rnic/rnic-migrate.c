/*
 * rnic: emulated RoCEv2 RNIC -- live migration
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * Every object the guest created travels with the VM: the registers and
 * counters, each table's live entries with the host copies of their page
 * lists, and each QP's transport state down to the shadow SQ slots, the
 * responder's replay ring and the retry timers.  The destination runs
 * the same device with the same properties, so a table index means the
 * same thing on both sides; the stream is still checked, because a
 * mismatched property set would otherwise write past a table.
 *
 * What does not travel: Ethernet frames the device had queued but not yet
 * handled (received RoCE frames, delayed or held-back ones from the fault
 * properties).  They are frames lost on the wire as far as either end can
 * tell; RC retransmission recovers them, and UD may lose them anyway.
 *
 * Tables are sparse on the wire: a count, then (index, entry) for each
 * live entry, so a device with a million MR slots and three MRs sends
 * three.
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/bitmap.h"
#include "hw/pci/msix.h"
#include "migration/vmstate.h"
#include "migration/qemu-file-types.h"
#include "system/runstate.h"
#include "rnic.h"
#include "rnic-transport.h"
#include "trace.h"

/* ---- the pieces every object is made of ---- */

static const VMStateDescription vmstate_rnic_pbl = {
    .name = "rnic/pbl",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(npages, RnicPbl),
        VMSTATE_UINT32(cap, RnicPbl),
        VMSTATE_UINT8(page_shift, RnicPbl),
        /* 'cap' entries: a FAST_REG MR's list is allocated in full. */
        VMSTATE_VARRAY_UINT32_ALLOC(pages, RnicPbl, cap, 0,
                                    vmstate_info_uint64, uint64_t),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_rnic_ring = {
    .name = "rnic/ring",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_STRUCT(pbl, RnicRing, 1, vmstate_rnic_pbl, RnicPbl),
        VMSTATE_UINT32(log_size, RnicRing),
        VMSTATE_UINT32(stride, RnicRing),
        VMSTATE_UINT32(first_page, RnicRing),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_rnic_wq = {
    .name = "rnic/wq",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_STRUCT(ring, RnicWq, 1, vmstate_rnic_ring, RnicRing),
        VMSTATE_UINT32(pi, RnicWq),
        VMSTATE_UINT32(ci, RnicWq),
        VMSTATE_UINT32(max_sge, RnicWq),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_rnic_av = {
    .name = "rnic/av",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT8_ARRAY(dgid, RnicAV, 16),
        VMSTATE_UINT8_ARRAY(dmac, RnicAV, 6),
        VMSTATE_UINT8(sgid_index, RnicAV),
        VMSTATE_UINT8(hop_limit, RnicAV),
        VMSTATE_UINT32(flow_label, RnicAV),
        VMSTATE_UINT8(traffic_class, RnicAV),
        VMSTATE_UINT8(net_type, RnicAV),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_rnic_sge = {
    .name = "rnic/sge",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(addr, RnicSge),
        VMSTATE_UINT32(length, RnicSge),
        VMSTATE_UINT32(lkey, RnicSge),
        VMSTATE_END_OF_LIST()
    },
};

/* ---- table entries ---- */

static const VMStateDescription vmstate_rnic_uctx = {
    .name = "rnic/uctx",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(valid, RnicUctx),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_rnic_pd = {
    .name = "rnic/pd",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(valid, RnicPD),
        VMSTATE_UINT16(uctx, RnicPD),
        VMSTATE_UINT32(refcnt, RnicPD),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_rnic_eq = {
    .name = "rnic/eq",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(valid, RnicEQ),
        VMSTATE_STRUCT(ring, RnicEQ, 1, vmstate_rnic_ring, RnicRing),
        VMSTATE_UINT32(pi, RnicEQ),
        VMSTATE_UINT32(ci, RnicEQ),
        VMSTATE_BOOL(armed, RnicEQ),
        VMSTATE_UINT16(vector, RnicEQ),
        VMSTATE_UINT32(lost, RnicEQ),
        VMSTATE_UINT32(refcnt, RnicEQ),
        VMSTATE_BOOL(db_pending, RnicEQ),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_rnic_cq = {
    .name = "rnic/cq",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(valid, RnicCQ),
        VMSTATE_UINT16(uctx, RnicCQ),
        VMSTATE_STRUCT(ring, RnicCQ, 1, vmstate_rnic_ring, RnicRing),
        VMSTATE_UINT32(pi, RnicCQ),
        VMSTATE_UINT32(ci, RnicCQ),
        VMSTATE_UINT32(eqn, RnicCQ),
        VMSTATE_BOOL(armed, RnicCQ),
        VMSTATE_BOOL(armed_solicited, RnicCQ),
        VMSTATE_BOOL(overrun, RnicCQ),
        VMSTATE_UINT32(refcnt, RnicCQ),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_rnic_mr = {
    .name = "rnic/mr",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(valid, RnicMR),
        VMSTATE_UINT8(key, RnicMR),
        VMSTATE_UINT16(uctx, RnicMR),
        VMSTATE_UINT32(pdn, RnicMR),
        VMSTATE_UINT32(access, RnicMR),
        VMSTATE_UINT32(flags, RnicMR),
        VMSTATE_UINT64(iova, RnicMR),
        VMSTATE_UINT64(length, RnicMR),
        VMSTATE_STRUCT(pbl, RnicMR, 1, vmstate_rnic_pbl, RnicPbl),
        VMSTATE_UINT32(max_pages, RnicMR),
        VMSTATE_BOOL(fr_valid, RnicMR),
        VMSTATE_UINT32(mw_refs, RnicMR),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_rnic_mw = {
    .name = "rnic/mw",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(valid, RnicMW),
        VMSTATE_BOOL(bound, RnicMW),
        VMSTATE_UINT8(type, RnicMW),
        VMSTATE_UINT8(key, RnicMW),
        VMSTATE_UINT16(uctx, RnicMW),
        VMSTATE_UINT32(pdn, RnicMW),
        VMSTATE_UINT32(mr, RnicMW),
        VMSTATE_UINT32(qpn, RnicMW),
        VMSTATE_UINT32(access, RnicMW),
        VMSTATE_UINT64(va, RnicMW),
        VMSTATE_UINT64(length, RnicMW),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_rnic_srq = {
    .name = "rnic/srq",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(valid, RnicSRQ),
        VMSTATE_UINT16(uctx, RnicSRQ),
        VMSTATE_UINT32(pdn, RnicSRQ),
        VMSTATE_STRUCT(wq, RnicSRQ, 1, vmstate_rnic_wq, RnicWq),
        VMSTATE_UINT32(limit, RnicSRQ),
        VMSTATE_UINT32(refcnt, RnicSRQ),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_rnic_gid = {
    .name = "rnic/gid",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(valid, RnicGid),
        VMSTATE_UINT8(type, RnicGid),
        VMSTATE_UINT8_ARRAY(gid, RnicGid, 16),
        VMSTATE_UINT8_ARRAY(mac, RnicGid, 6),
        VMSTATE_UINT16(vlan_id, RnicGid),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_rnic_flow = {
    .name = "rnic/flow",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(valid, RnicFlow),
        VMSTATE_UINT16(uctx, RnicFlow),
        VMSTATE_UINT32(qpn, RnicFlow),
        /* An ABI struct of byte arrays: the same bytes on any host. */
        {
            .name = "m",
            .size = sizeof(struct rnic_flow_match),
            .info = &vmstate_info_buffer,
            .flags = VMS_BUFFER,
            .offset = offsetof(RnicFlow, m),
        },
        VMSTATE_END_OF_LIST()
    },
};

/* The QPNs go separately, once 'nqp' is known to fit the row. */
static const VMStateDescription vmstate_rnic_mcast = {
    .name = "rnic/mcast",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT8_ARRAY(gid, RnicMcast, 16),
        VMSTATE_UINT32(nqp, RnicMcast),
        VMSTATE_END_OF_LIST()
    },
};

/* ---- a QP and its transport ---- */

static const VMStateDescription vmstate_rnic_swqe = {
    .name = "rnic/swqe",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT8(state, RnicSwqe),
        VMSTATE_UINT8(opcode, RnicSwqe),
        VMSTATE_UINT8(flags, RnicSwqe),
        VMSTATE_UINT8(num_sge, RnicSwqe),
        VMSTATE_UINT8(status, RnicSwqe),
        VMSTATE_BOOL(started, RnicSwqe),
        VMSTATE_BOOL(inline_data, RnicSwqe),
        VMSTATE_UINT16(idx, RnicSwqe),
        VMSTATE_UINT64(wr_id, RnicSwqe),
        VMSTATE_UINT32(imm_inv, RnicSwqe),
        VMSTATE_UINT32(rkey, RnicSwqe),
        VMSTATE_UINT64(remote_addr, RnicSwqe),
        VMSTATE_UINT64(compare_add, RnicSwqe),
        VMSTATE_UINT64(swap, RnicSwqe),
        VMSTATE_UINT32(length, RnicSwqe),
        VMSTATE_UINT32(npkts, RnicSwqe),
        VMSTATE_UINT32(first_psn, RnicSwqe),
        VMSTATE_UINT32(last_psn, RnicSwqe),
        VMSTATE_UINT32(read_off, RnicSwqe),
        VMSTATE_UINT32(fr_npages, RnicSwqe),
        VMSTATE_UINT8(fr_shift, RnicSwqe),
        VMSTATE_STRUCT(av, RnicSwqe, 1, vmstate_rnic_av, RnicAV),
        VMSTATE_UINT32(ud_qpn, RnicSwqe),
        VMSTATE_UINT32(ud_qkey, RnicSwqe),
        VMSTATE_STRUCT_ARRAY(sge, RnicSwqe, RNIC_SQ_MAX_SGE, 1,
                             vmstate_rnic_sge, RnicSge),
        VMSTATE_UINT8_ARRAY(inl, RnicSwqe, RNIC_MAX_INLINE),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_rnic_req = {
    .name = "rnic/req",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT16(fetch_idx, RnicReq),
        VMSTATE_UINT16(send_idx, RnicReq),
        VMSTATE_UINT32(send_pkt, RnicReq),
        VMSTATE_UINT32(psn, RnicReq),
        VMSTATE_UINT32(max_psn, RnicReq),
        VMSTATE_UINT32(noack_pkts, RnicReq),
        VMSTATE_UINT32(rd_outstanding, RnicReq),
        VMSTATE_UINT32(cwnd, RnicReq),
        VMSTATE_UINT32(cwnd_psn, RnicReq),
        VMSTATE_UINT32(cnp_psn, RnicReq),
        VMSTATE_UINT16(ip_id, RnicReq),
        VMSTATE_END_OF_LIST()
    },
};

/*
 * The retry timers run on the virtual clock, which stops with the VM:
 * a deadline 5 ms away at the switch is 5 ms away when the VM resumes.
 */
static const VMStateDescription vmstate_rnic_comp = {
    .name = "rnic/comp",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(psn, RnicComp),
        VMSTATE_UINT8(wait, RnicComp),
        VMSTATE_UINT8(retry_left, RnicComp),
        VMSTATE_UINT8(rnr_left, RnicComp),
        VMSTATE_BOOL(rewound, RnicComp),
        VMSTATE_UINT8(probes, RnicComp),
        VMSTATE_BOOL(sqd_notified, RnicComp),
        VMSTATE_BOOL(ack_expired, RnicComp),
        VMSTATE_TIMER_PTR(ack_timer, RnicComp),
        VMSTATE_TIMER_PTR(rnr_timer, RnicComp),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_rnic_rwqe = {
    .name = "rnic/rwqe",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(valid, RnicRwqe),
        VMSTATE_BOOL(from_srq, RnicRwqe),
        VMSTATE_UINT16(idx, RnicRwqe),
        VMSTATE_UINT16(slot_mask, RnicRwqe),
        VMSTATE_UINT8(num_sge, RnicRwqe),
        VMSTATE_UINT64(wr_id, RnicRwqe),
        VMSTATE_UINT64(total, RnicRwqe),
        VMSTATE_UINT64(off, RnicRwqe),
        VMSTATE_STRUCT_ARRAY(sge, RnicRwqe, RNIC_RQ_MAX_SGE, 1,
                             vmstate_rnic_sge, RnicSge),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_rnic_rdreq = {
    .name = "rnic/rdreq",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(valid, RnicRdReq),
        VMSTATE_BOOL(atomic, RnicRdReq),
        VMSTATE_BOOL(place, RnicRdReq),
        VMSTATE_BOOL(pending, RnicRdReq),
        VMSTATE_BOOL(replay, RnicRdReq),
        VMSTATE_UINT32(psn, RnicRdReq),
        VMSTATE_UINT32(npkts, RnicRdReq),
        VMSTATE_UINT64(va, RnicRdReq),
        VMSTATE_UINT32(rkey, RnicRdReq),
        VMSTATE_UINT32(len, RnicRdReq),
        VMSTATE_UINT32(cur_psn, RnicRdReq),
        VMSTATE_UINT64(cur_va, RnicRdReq),
        VMSTATE_UINT32(cur_len, RnicRdReq),
        VMSTATE_BOOL(cur_first, RnicRdReq),
        VMSTATE_UINT64(atomic_orig, RnicRdReq),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_rnic_resp = {
    .name = "rnic/resp",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(epsn, RnicResp),
        VMSTATE_UINT32(msn, RnicResp),
        VMSTATE_BOOL(nak_sent, RnicResp),
        VMSTATE_UINT32(ahead_max, RnicResp),
        VMSTATE_BOOL(comm_est, RnicResp),
        VMSTATE_UINT8(msg, RnicResp),
        VMSTATE_UINT32(pkts_since_ack, RnicResp),
        VMSTATE_STRUCT(rwqe, RnicResp, 1, vmstate_rnic_rwqe, RnicRwqe),
        VMSTATE_BOOL(write_imm, RnicResp),
        VMSTATE_UINT64(write_va, RnicResp),
        VMSTATE_UINT32(write_rkey, RnicResp),
        VMSTATE_UINT32(write_resid, RnicResp),
        VMSTATE_UINT32(write_len, RnicResp),
        VMSTATE_STRUCT_ARRAY(rd, RnicResp, RNIC_TP_RD_RING, 1,
                             vmstate_rnic_rdreq, RnicRdReq),
        VMSTATE_UINT32(rd_head, RnicResp),
        VMSTATE_BOOL(ack_deferred, RnicResp),
        VMSTATE_UINT8(ack_syndrome, RnicResp),
        VMSTATE_UINT32(ack_psn, RnicResp),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_rnic_tp = {
    .name = "rnic/transport",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_STRUCT(req, RnicTransport, 1, vmstate_rnic_req, RnicReq),
        VMSTATE_STRUCT(comp, RnicTransport, 1, vmstate_rnic_comp, RnicComp),
        VMSTATE_STRUCT(resp, RnicTransport, 1, vmstate_rnic_resp, RnicResp),
        VMSTATE_STRUCT_ARRAY(swqe, RnicTransport, RNIC_TP_MAX_INFLIGHT, 1,
                             vmstate_rnic_swqe, RnicSwqe),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_rnic_rss = {
    .name = "rnic/rss",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT8(log_tbl_size, RnicRss),
        VMSTATE_UINT16(fields, RnicRss),
        VMSTATE_UINT8_ARRAY(key, RnicRss, RNIC_RSS_KEY_LEN),
        VMSTATE_UINT32_ARRAY(wq_qpn, RnicRss, 1u << RNIC_RSS_MAX_LOG_TBL),
        VMSTATE_END_OF_LIST()
    },
};

static bool rnic_qp_rss_needed(void *opaque)
{
    return ((RnicQP *)opaque)->rss != NULL;
}

static int rnic_qp_rss_pre_load(void *opaque)
{
    RnicQP *qp = opaque;

    if (!qp->rss) {
        qp->rss = g_new0(RnicRss, 1);
    }
    return 0;
}

/* Raw packet QPs that spread their frames (SET_RSS) carry the table. */
static const VMStateDescription vmstate_rnic_qp_rss = {
    .name = "rnic/qp/rss",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = rnic_qp_rss_needed,
    .pre_load = rnic_qp_rss_pre_load,
    .fields = (const VMStateField[]) {
        VMSTATE_STRUCT_POINTER(rss, RnicQP, vmstate_rnic_rss, RnicRss),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_rnic_qp = {
    .name = "rnic/qp",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(qpn, RnicQP),
        VMSTATE_UINT16(uctx, RnicQP),
        VMSTATE_UINT8(type, RnicQP),
        VMSTATE_UINT8(state, RnicQP),
        VMSTATE_UINT32(flags, RnicQP),
        VMSTATE_UINT32(pdn, RnicQP),
        VMSTATE_UINT32(send_cqn, RnicQP),
        VMSTATE_UINT32(recv_cqn, RnicQP),
        VMSTATE_UINT32(srqn, RnicQP),
        VMSTATE_UINT16(max_inline, RnicQP),
        VMSTATE_UINT32(max_send_sge, RnicQP),
        VMSTATE_UINT32(max_recv_sge, RnicQP),
        VMSTATE_UINT32(qkey, RnicQP),
        VMSTATE_UINT32(dest_qpn, RnicQP),
        VMSTATE_UINT32(rq_psn, RnicQP),
        VMSTATE_UINT32(sq_psn, RnicQP),
        VMSTATE_UINT32(access_flags, RnicQP),
        VMSTATE_UINT8(path_mtu, RnicQP),
        VMSTATE_UINT8(timeout, RnicQP),
        VMSTATE_UINT8(retry_cnt, RnicQP),
        VMSTATE_UINT8(rnr_retry, RnicQP),
        VMSTATE_UINT8(min_rnr_timer, RnicQP),
        VMSTATE_UINT8(max_rd_atomic, RnicQP),
        VMSTATE_UINT8(max_dest_rd_atomic, RnicQP),
        VMSTATE_UINT8(en_sqd_async_notify, RnicQP),
        VMSTATE_UINT8(port_num, RnicQP),
        VMSTATE_UINT16(pkey_index, RnicQP),
        VMSTATE_STRUCT(av, RnicQP, 1, vmstate_rnic_av, RnicAV),
        VMSTATE_STRUCT(sq, RnicQP, 1, vmstate_rnic_wq, RnicWq),
        VMSTATE_STRUCT(rq, RnicQP, 1, vmstate_rnic_wq, RnicWq),
        VMSTATE_STRUCT_POINTER(tp, RnicQP, vmstate_rnic_tp, RnicTransport),
        VMSTATE_END_OF_LIST()
    },
    .subsections = (const VMStateDescription * const []) {
        &vmstate_rnic_qp_rss,
        NULL
    },
};

/* ---- sparse tables ---- */

/*
 * One object table: where it is, how many slots it has and which of them
 * hold an object.  QPs are allocated on create, so their table holds
 * pointers and 'load_slot' makes the object before its state goes in.
 */
typedef struct RnicMigTable {
    const char *name;
    const VMStateDescription *vmsd;
    void *(*slot)(RnicState *s, uint32_t i);       /* NULL: no object */
    uint32_t (*nslots)(RnicState *s);
    void *(*load_slot)(RnicState *s, uint32_t i);  /* NULL: refuse */
    /* After the entry's fields: the rest (mcast QPNs), or a check. */
    int (*put_extra)(QEMUFile *f, RnicState *s, void *obj);
    int (*get_extra)(QEMUFile *f, RnicState *s, void *obj);
} RnicMigTable;

#define RNIC_MIG_ARRAY(tbl, type, field, count, live)                      \
    static void *rnic_mig_##tbl##_slot(RnicState *s, uint32_t i)           \
    {                                                                      \
        type *o = &s->field[i];                                            \
        return (live) ? o : NULL;                                          \
    }                                                                      \
    static void *rnic_mig_##tbl##_load(RnicState *s, uint32_t i)           \
    {                                                                      \
        return &s->field[i];                                               \
    }                                                                      \
    static uint32_t rnic_mig_##tbl##_n(RnicState *s)                       \
    {                                                                      \
        return (count);                                                    \
    }

RNIC_MIG_ARRAY(uctx, RnicUctx, uctx, s->prop.max_uctx + 1, o->valid)
RNIC_MIG_ARRAY(pd, RnicPD, pd, s->prop.max_pd + 1, o->valid)
RNIC_MIG_ARRAY(eq, RnicEQ, eq, s->prop.max_eq, o->valid)
RNIC_MIG_ARRAY(cq, RnicCQ, cq, s->prop.max_cq + 1, o->valid)
RNIC_MIG_ARRAY(mr, RnicMR, mr, s->prop.max_mr + 1, o->valid)
RNIC_MIG_ARRAY(mw, RnicMW, mw, s->prop.max_mw + 1, o->valid)
RNIC_MIG_ARRAY(srq, RnicSRQ, srq, s->prop.max_srq + 1, o->valid)
RNIC_MIG_ARRAY(gid, RnicGid, gid, s->prop.max_gid, o->valid)
RNIC_MIG_ARRAY(flow, RnicFlow, flow, s->prop.max_flow, o->valid)
RNIC_MIG_ARRAY(mcast, RnicMcast, mcast, s->prop.max_mcast_grp, o->nqp)

static int rnic_mig_mcast_put(QEMUFile *f, RnicState *s, void *obj)
{
    RnicMcast *m = obj;

    for (uint32_t i = 0; i < m->nqp; i++) {
        qemu_put_be32(f, m->qpn[i]);
    }
    return 0;
}

static int rnic_mig_mcast_get(QEMUFile *f, RnicState *s, void *obj)
{
    RnicMcast *m = obj;

    if (m->nqp > s->prop.max_mcast_qp_attach) {
        error_report("rnic: migrated multicast group has %u QPs, "
                     "max-mcast-qp-attach is %u", m->nqp,
                     s->prop.max_mcast_qp_attach);
        return -EINVAL;
    }
    for (uint32_t i = 0; i < m->nqp; i++) {
        m->qpn[i] = qemu_get_be32(f);
    }
    return 0;
}

static void *rnic_mig_qp_slot(RnicState *s, uint32_t i)
{
    return s->qp[i];
}

static uint32_t rnic_mig_qp_n(RnicState *s)
{
    return s->prop.max_qp + 2;
}

/* A QP with its transport and timers, as CREATE_QP makes it. */
static void *rnic_mig_qp_load(RnicState *s, uint32_t i)
{
    RnicQP *qp;

    if (s->qp[i]) {
        return NULL;
    }
    qp = g_new0(RnicQP, 1);
    if (!rnic_tp_qp_init(s, qp)) {
        g_free(qp);
        return NULL;
    }
    qp->qpn = i;
    s->qp[i] = qp;
    return qp;
}

/* What the QP names must exist here, or the data path would index past. */
static int rnic_mig_qp_get(QEMUFile *f, RnicState *s, void *obj)
{
    RnicQP *qp = obj;

    if (qp->qpn > s->prop.max_qp + 1 || s->qp[qp->qpn] != qp ||
        qp->pdn > s->prop.max_pd || !s->pd[qp->pdn].valid ||
        qp->send_cqn > s->prop.max_cq || !s->cq[qp->send_cqn].valid ||
        qp->recv_cqn > s->prop.max_cq || !s->cq[qp->recv_cqn].valid ||
        qp->srqn > s->prop.max_srq ||
        (qp->srqn && !s->srq[qp->srqn].valid) ||
        qp->uctx > s->prop.max_uctx) {
        error_report("rnic: migrated QP 0x%x names objects this device "
                     "does not have", qp->qpn);
        return -EINVAL;
    }
    return 0;
}

static const RnicMigTable rnic_mig_tables[] = {
    { "uctx", &vmstate_rnic_uctx, rnic_mig_uctx_slot, rnic_mig_uctx_n,
      rnic_mig_uctx_load },
    { "pd", &vmstate_rnic_pd, rnic_mig_pd_slot, rnic_mig_pd_n,
      rnic_mig_pd_load },
    { "eq", &vmstate_rnic_eq, rnic_mig_eq_slot, rnic_mig_eq_n,
      rnic_mig_eq_load },
    { "cq", &vmstate_rnic_cq, rnic_mig_cq_slot, rnic_mig_cq_n,
      rnic_mig_cq_load },
    { "mr", &vmstate_rnic_mr, rnic_mig_mr_slot, rnic_mig_mr_n,
      rnic_mig_mr_load },
    { "mw", &vmstate_rnic_mw, rnic_mig_mw_slot, rnic_mig_mw_n,
      rnic_mig_mw_load },
    { "srq", &vmstate_rnic_srq, rnic_mig_srq_slot, rnic_mig_srq_n,
      rnic_mig_srq_load },
    { "gid", &vmstate_rnic_gid, rnic_mig_gid_slot, rnic_mig_gid_n,
      rnic_mig_gid_load },
    { "flow", &vmstate_rnic_flow, rnic_mig_flow_slot, rnic_mig_flow_n,
      rnic_mig_flow_load },
    { "mcast", &vmstate_rnic_mcast, rnic_mig_mcast_slot, rnic_mig_mcast_n,
      rnic_mig_mcast_load, rnic_mig_mcast_put, rnic_mig_mcast_get },
    { "qp", &vmstate_rnic_qp, rnic_mig_qp_slot, rnic_mig_qp_n,
      rnic_mig_qp_load, NULL, rnic_mig_qp_get },
};

/* Marks the end of a table, so that a short or long table is noticed. */
#define RNIC_MIG_TABLE_END      0xffffffffu

static int rnic_mig_table_put(QEMUFile *f, void *pv, size_t size,
                              const VMStateField *field, JSONWriter *vmdesc)
{
    RnicState *s = pv;
    int ret;

    for (size_t t = 0; t < ARRAY_SIZE(rnic_mig_tables); t++) {
        const RnicMigTable *tb = &rnic_mig_tables[t];
        uint32_t n = tb->nslots(s), count = 0;

        for (uint32_t i = 0; i < n; i++) {
            void *obj = tb->slot(s, i);

            if (!obj) {
                continue;
            }
            qemu_put_be32(f, i);
            ret = vmstate_save_state(f, tb->vmsd, obj, NULL);
            if (!ret && tb->put_extra) {
                ret = tb->put_extra(f, s, obj);
            }
            if (ret) {
                return ret;
            }
            count++;
        }
        qemu_put_be32(f, RNIC_MIG_TABLE_END);
        trace_rnic_migrate_table(tb->name, count);
    }
    return 0;
}

static int rnic_mig_table_get(QEMUFile *f, void *pv, size_t size,
                              const VMStateField *field)
{
    RnicState *s = pv;
    int ret;

    for (size_t t = 0; t < ARRAY_SIZE(rnic_mig_tables); t++) {
        const RnicMigTable *tb = &rnic_mig_tables[t];
        uint32_t n = tb->nslots(s), count = 0;

        for (;;) {
            uint32_t i = qemu_get_be32(f);
            void *obj;

            if (i == RNIC_MIG_TABLE_END) {
                break;
            }
            obj = i < n ? tb->load_slot(s, i) : NULL;
            if (!obj) {
                error_report("rnic: migrated %s %u does not fit this device "
                             "(%u slots): are its properties the source's?",
                             tb->name, i, n);
                return -EINVAL;
            }
            ret = vmstate_load_state(f, tb->vmsd, obj, tb->vmsd->version_id);
            if (!ret && tb->get_extra) {
                ret = tb->get_extra(f, s, obj);
            }
            if (ret) {
                return ret;
            }
            count++;
        }
        trace_rnic_migrate_table(tb->name, count);
    }
    return qemu_file_get_error(f);
}

static const VMStateInfo rnic_mig_table_info = {
    .name = "rnic-object-tables",
    .get = rnic_mig_table_get,
    .put = rnic_mig_table_put,
};

/* ---- the device ---- */

/*
 * The incoming device starts from nothing: a reset device has no objects,
 * but be sure, since the tables are filled by index.
 */
static int rnic_pre_load(void *opaque)
{
    RnicState *s = opaque;

    rnic_reset(s);
    return 0;
}

static int rnic_post_load(void *opaque, int version_id)
{
    RnicState *s = opaque;
    uint32_t nqp = 0;

    /*
     * The scheduling state is not migrated: every QP goes on the work
     * list (one with nothing to do leaves it at once), and the bottom
     * half runs when the VM does.
     */
    for (uint32_t i = 0; i <= s->prop.max_qp + 1; i++) {
        RnicQP *qp = s->qp[i];

        if (qp) {
            qp->scheduled = true;
            QTAILQ_INSERT_TAIL(&s->work_list, qp, work_next);
            /* Its run rewrites the record's flags from scratch. */
            qp->sq_dbrec_ring = true;
            qp->sq_dbrec_seen = qp->sq.pi;
            nqp++;
        }
    }
    s->cmd_pending = s->cmdq_pi != s->cmdq_ci;
    s->cq_ev_any = !bitmap_empty(s->cq_ev, s->prop.max_cq + 1);
    s->eq_db_pending = false;
    for (uint32_t i = 0; i < s->prop.max_eq; i++) {
        s->eq_db_pending |= s->eq[i].db_pending;
    }
    s->bh_deferred = true;
    s->mig_incoming = true;
    trace_rnic_migrate_loaded(nqp, s->host_mem_used);
    return 0;
}

static int rnic_pre_save(void *opaque)
{
    RnicState *s = opaque;

    /* The VM is stopped, so no device work is on the stack. */
    rnic_pm_run_reset(s);
    s->mig_cq_bits = s->prop.max_cq + 1;
    return 0;
}

static bool rnic_cq_bits_ok(void *opaque, int version_id)
{
    RnicState *s = opaque;

    return s->mig_cq_bits == (int32_t)(s->prop.max_cq + 1);
}

const VMStateDescription vmstate_rnic = {
    .name = "rnic",
    .version_id = 1,
    .minimum_version_id = 1,
    .pre_save = rnic_pre_save,
    .pre_load = rnic_pre_load,
    .post_load = rnic_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_PCI_DEVICE(parent_obj, RnicState),
        VMSTATE_MSIX(parent_obj, RnicState),
        VMSTATE_UINT32(ctrl, RnicState),
        VMSTATE_UINT32(status, RnicState),
        VMSTATE_UINT32(fatal_code, RnicState),
        VMSTATE_UINT64(cmdq_base, RnicState),
        VMSTATE_UINT32(cmdq_log_size, RnicState),
        VMSTATE_UINT32(cmdq_pi, RnicState),
        VMSTATE_UINT32(cmdq_ci, RnicState),
        VMSTATE_UINT64(txq_base, RnicState),
        VMSTATE_UINT32(txq_log_size, RnicState),
        VMSTATE_UINT32(txq_pi, RnicState),
        VMSTATE_UINT32(txq_ci, RnicState),
        VMSTATE_UINT64(rxq_base, RnicState),
        VMSTATE_UINT32(rxq_log_size, RnicState),
        VMSTATE_UINT32(rxq_pi, RnicState),
        VMSTATE_UINT32(rxq_ci, RnicState),
        VMSTATE_UINT32(net_ctrl, RnicState),
        VMSTATE_UINT32(net_irq_mask, RnicState),
        VMSTATE_UINT32(net_vector, RnicState),
        VMSTATE_UINT32(cnt_hi_latch, RnicState),
        VMSTATE_UINT64_ARRAY(cnt, RnicState, RNIC_CNT_MAX),
        VMSTATE_UINT32(loss_state, RnicState),
        VMSTATE_UINT32(fault_state, RnicState),
        VMSTATE_BOOL(link_up, RnicState),
        VMSTATE_BOOL(overrun_sweep, RnicState),
        VMSTATE_UINT32(sweep_next, RnicState),
        VMSTATE_INT32(mig_cq_bits, RnicState),
        VMSTATE_VALIDATE("cq bitmap size", rnic_cq_bits_ok),
        VMSTATE_BITMAP(cq_ev, RnicState, 0, mig_cq_bits),
        {
            .name = "objects",
            .info = &rnic_mig_table_info,
            .flags = VMS_SINGLE,
            .offset = 0,
        },
        /* Last: making the QPs above charged them a second time. */
        VMSTATE_UINT64(host_mem_used, RnicState),
        VMSTATE_END_OF_LIST()
    },
};

/*
 * A stopped VM's device does no work: otherwise, after the final state
 * went to the destination, the source's bottom half could still send
 * frames the destination is about to send again.
 */
static void rnic_vm_state_change(void *opaque, bool running, RunState state)
{
    RnicState *s = opaque;
    NetClientState *nc = qemu_get_queue(s->nic);

    if (!running) {
        return;
    }
    /*
     * While the incoming VM waited for its state, its netdev went on
     * queueing frames for it: on a hub (socket multicast) every frame of
     * the segment, thousands of them, all meant for the source and long
     * stale.  Handed to the transport first, they would delay the fresh
     * ones past the peers' ACK timeouts.  They are dropped instead, as a
     * switch would not have sent them to this port before the move.
     */
    if (s->mig_incoming) {
        s->mig_incoming = false;
        if (nc->peer) {
            qemu_purge_queued_packets(nc->peer);
        }
        trace_rnic_migrate_started();
    }
    if (s->bh_deferred) {
        s->bh_deferred = false;
        qemu_bh_schedule(s->bh);
    }
}

void rnic_migrate_init(RnicState *s)
{
    s->vmse = qemu_add_vm_change_state_handler(rnic_vm_state_change, s);
}

void rnic_migrate_fini(RnicState *s)
{
    qemu_del_vm_change_state_handler(s->vmse);
    s->vmse = NULL;
}
