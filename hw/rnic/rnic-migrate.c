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
#include "rnic-cmd.h"
#include "rnic-transport.h"
#include "trace.h"

/*
 * A stream is input like a guest's commands: a corrupt or crafted one
 * must be refused, not believed.  Every loaded field that indexes a
 * table or an array, sizes an allocation or a copy, or is used as a
 * shift is checked against the limits the commands enforce before the
 * device runs (rnic_mig_*_check below), and what the destination holds
 * is charged to its own max-host-mem as it is loaded.
 *
 * The page lists sit deep inside objects, where a VMStateDescription
 * sees only the list; the device whose tables are being loaded is kept
 * here for the length of rnic_mig_table_get() so that a list's size is
 * charged before it is allocated.  Loading runs under the BQL, one
 * device at a time.
 */
static RnicState *rnic_mig_dst;

static int rnic_mig_refuse(const char *what, uint32_t idx, const char *cond)
{
    error_report("rnic: migration stream refused: %s %u fails '%s'",
                 what, idx, cond);
    return -EINVAL;
}

#define RNIC_MIG_CHECK(ok, what, idx)                                      \
    do {                                                                   \
        if (!(ok)) {                                                       \
            return rnic_mig_refuse(what, idx, #ok);                        \
        }                                                                  \
    } while (0)

/* ---- the pieces every object is made of ---- */

/*
 * Before 'cap' entries are allocated: the list must fit the destination's
 * host-memory budget (a stream could ask for 32 GiB), hold its pages, and
 * have a page size the data path can shift by.
 */
static bool rnic_mig_pbl_ok(void *opaque, int version_id)
{
    RnicPbl *pbl = opaque;
    RnicState *s = rnic_mig_dst;

    /* Saving runs the test too: there is nothing to check then. */
    if (!s) {
        return true;
    }
    if (pbl->npages > pbl->cap ||
        pbl->page_shift > RNIC_PBL_MAX_SHIFT ||
        (pbl->npages && pbl->page_shift < RNIC_PBL_MIN_SHIFT)) {
        error_report("rnic: migration stream refused: page list of %u/%u "
                     "pages, page shift %u", pbl->npages, pbl->cap,
                     pbl->page_shift);
        return false;
    }
    if (!rnic_host_mem_charge(s, (uint64_t)pbl->cap * sizeof(uint64_t))) {
        error_report("rnic: migration stream refused: a page list of %u "
                     "pages exceeds max-host-mem", pbl->cap);
        return false;
    }
    return true;
}

static const VMStateDescription vmstate_rnic_pbl = {
    .name = "rnic/pbl",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(npages, RnicPbl),
        VMSTATE_UINT32(cap, RnicPbl),
        VMSTATE_UINT8(page_shift, RnicPbl),
        VMSTATE_VALIDATE("page list size", rnic_mig_pbl_ok),
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

static bool rnic_av_ib_needed(void *opaque)
{
    const RnicAV *av = opaque;

    return av->net_type == RNIC_NET_IB;
}

/* An IB path's LRH fields; a RoCE stream stays as it was. */
static const VMStateDescription vmstate_rnic_av_ib = {
    .name = "rnic/av/ib",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = rnic_av_ib_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT16(dlid, RnicAV),
        VMSTATE_UINT8(src_path_bits, RnicAV),
        VMSTATE_UINT8(ib_flags, RnicAV),
        VMSTATE_UINT8(sl, RnicAV),
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
    .subsections = (const VMStateDescription * const []) {
        &vmstate_rnic_av_ib,
        NULL
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
        /* Charged as SET_RSS charges it; rnic_qp_free() uncharges it. */
        if (!rnic_mig_dst || !rnic_host_mem_charge(rnic_mig_dst,
                                                   sizeof(RnicRss))) {
            error_report("rnic: migration stream refused: no host memory "
                         "for an RSS table");
            return -ENOMEM;
        }
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

/* ---- what a loaded entry may hold ---- */

/* 0 for the kernel, or a user context loaded before it. */
static bool rnic_mig_uctx_ok(RnicState *s, uint16_t uctx)
{
    return !uctx || (uctx <= s->prop.max_uctx && s->uctx[uctx].valid);
}

static bool rnic_mig_pd_ok(RnicState *s, uint32_t pdn)
{
    return pdn <= s->prop.max_pd && s->pd[pdn].valid;
}

/* As rnic_cmd_load_ring() makes a ring: 4 KiB pages covering it exactly. */
static bool rnic_mig_ring_ok(const RnicRing *r, uint32_t stride,
                             uint32_t first_page, uint32_t min_log,
                             uint32_t max_log)
{
    return r->stride == stride && r->first_page == first_page &&
           r->log_size >= min_log && r->log_size <= max_log &&
           r->pbl.page_shift == 12 && r->pbl.npages == r->pbl.cap &&
           r->pbl.npages == first_page +
               DIV_ROUND_UP((uint64_t)stride << r->log_size, RNIC_RING_PAGE);
}

/* An RQ that an SRQ replaces has no ring at all. */
static bool rnic_mig_ring_empty(const RnicRing *r)
{
    return !r->pbl.cap && !r->pbl.npages && !r->log_size && !r->stride;
}

static bool rnic_mig_av_ok(RnicState *s, const RnicAV *av)
{
    /* net_type 0: a QP whose address was never set. */
    if (av->net_type == RNIC_NET_IB) {
        return s->ib && av->sl <= 15 && av->src_path_bits <= 0x7f &&
               !(av->ib_flags & ~RNIC_AV_IB_FLAGS) &&
               av->flow_label <= 0xfffff;
    }
    return av->sgid_index < s->prop.max_gid && av->flow_label <= 0xfffff &&
           (av->net_type == 0 || av->net_type == RNIC_NET_ROCE_V1 ||
            av->net_type == RNIC_NET_IPV4 || av->net_type == RNIC_NET_IPV6);
}

static int rnic_mig_uctx_check(RnicState *s, void *obj, uint32_t i)
{
    RnicUctx *u = obj;

    RNIC_MIG_CHECK(u->valid && i >= 1, "user context", i);
    return 0;
}

static int rnic_mig_pd_check(RnicState *s, void *obj, uint32_t i)
{
    RnicPD *pd = obj;

    RNIC_MIG_CHECK(pd->valid && rnic_mig_uctx_ok(s, pd->uctx), "PD", i);
    return 0;
}

static int rnic_mig_eq_check(RnicState *s, void *obj, uint32_t i)
{
    RnicEQ *eq = obj;

    RNIC_MIG_CHECK(eq->valid, "EQ", i);
    RNIC_MIG_CHECK(rnic_mig_ring_ok(&eq->ring, RNIC_EQE_SIZE, 0, 1,
                                    RNIC_EQ_MAX_LOG_SIZE), "EQ", i);
    RNIC_MIG_CHECK(eq->vector < s->prop.msix_vectors, "EQ", i);
    return 0;
}

static int rnic_mig_cq_check(RnicState *s, void *obj, uint32_t i)
{
    RnicCQ *cq = obj;

    RNIC_MIG_CHECK(cq->valid && i >= 1 && rnic_mig_uctx_ok(s, cq->uctx),
                   "CQ", i);
    RNIC_MIG_CHECK(rnic_mig_ring_ok(&cq->ring, RNIC_CQE_SIZE,
                                    RNIC_CQ_DBREC_PAGE_SIZE / RNIC_RING_PAGE,
                                    1, RNIC_CQ_MAX_LOG_SIZE), "CQ", i);
    RNIC_MIG_CHECK((1u << cq->ring.log_size) <= s->prop.max_cqe, "CQ", i);
    RNIC_MIG_CHECK(cq->eqn < s->prop.max_eq && s->eq[cq->eqn].valid,
                   "CQ", i);
    return 0;
}

static int rnic_mig_mr_check(RnicState *s, void *obj, uint32_t i)
{
    RnicMR *mr = obj;
    const RnicPbl *pbl = &mr->pbl;

    RNIC_MIG_CHECK(mr->valid && i >= 1 && rnic_mig_uctx_ok(s, mr->uctx) &&
                   rnic_mig_pd_ok(s, mr->pdn), "MR", i);
    RNIC_MIG_CHECK(!(mr->access & ~RNIC_ACCESS_ALL), "MR", i);
    RNIC_MIG_CHECK(!(mr->flags & ~(RNIC_MR_FLAG_PHYS | RNIC_MR_FLAG_FAST_REG)),
                   "MR", i);
    if (mr->flags & RNIC_MR_FLAG_PHYS) {
        RNIC_MIG_CHECK(!(mr->flags & RNIC_MR_FLAG_FAST_REG) && !pbl->cap,
                       "MR", i);
    } else if (mr->flags & RNIC_MR_FLAG_FAST_REG) {
        /* The list was allocated in full at creation. */
        RNIC_MIG_CHECK(pbl->cap == mr->max_pages &&
                       mr->max_pages <= s->prop.max_mr_pages, "MR", i);
    } else {
        RNIC_MIG_CHECK(pbl->npages >= 1 && pbl->npages == pbl->cap &&
                       pbl->npages <= s->prop.max_mr_pages, "MR", i);
    }
    return 0;
}

static int rnic_mig_mw_check(RnicState *s, void *obj, uint32_t i)
{
    RnicMW *mw = obj;

    RNIC_MIG_CHECK(mw->valid && i >= 1 && rnic_mig_uctx_ok(s, mw->uctx) &&
                   rnic_mig_pd_ok(s, mw->pdn), "MW", i);
    RNIC_MIG_CHECK(mw->type == 1 || mw->type == 2, "MW", i);
    RNIC_MIG_CHECK(!(mw->access & ~RNIC_ACCESS_ALL), "MW", i);
    /* The MRs came first: a bound window names one of them. */
    RNIC_MIG_CHECK(!mw->bound || (mw->mr >= 1 && mw->mr <= s->prop.max_mr &&
                                  s->mr[mw->mr].valid), "MW", i);
    return 0;
}

static int rnic_mig_srq_check(RnicState *s, void *obj, uint32_t i)
{
    RnicSRQ *srq = obj;

    RNIC_MIG_CHECK(srq->valid && i >= 1 && rnic_mig_uctx_ok(s, srq->uctx) &&
                   rnic_mig_pd_ok(s, srq->pdn), "SRQ", i);
    RNIC_MIG_CHECK(rnic_mig_ring_ok(&srq->wq.ring, RNIC_RQ_WQE_SIZE, 0, 0,
                                    RNIC_WQ_MAX_LOG_SIZE), "SRQ", i);
    RNIC_MIG_CHECK((1u << srq->wq.ring.log_size) <= s->prop.max_qp_wr &&
                   srq->wq.max_sge <= RNIC_RQ_MAX_SGE, "SRQ", i);
    return 0;
}

static int rnic_mig_gid_check(RnicState *s, void *obj, uint32_t i)
{
    RnicGid *g = obj;

    RNIC_MIG_CHECK(g->valid && (g->type == RNIC_GID_ROCE_V2_IPV4 ||
                                g->type == RNIC_GID_ROCE_V2_IPV6 ||
                                g->type == RNIC_GID_ROCE_V1), "GID", i);
    RNIC_MIG_CHECK(g->vlan_id == 0xffff || g->vlan_id < 4095, "GID", i);
    return 0;
}

static int rnic_mig_flow_check(RnicState *s, void *obj, uint32_t i)
{
    RnicFlow *fl = obj;

    /* Its QP comes later; rnic_mig_check_refs() looks for it. */
    RNIC_MIG_CHECK(fl->valid && rnic_mig_uctx_ok(s, fl->uctx) &&
                   fl->qpn <= s->prop.max_qp + 1, "flow rule", i);
    return 0;
}

static int rnic_mig_mcast_check(RnicState *s, void *obj, uint32_t i)
{
    RnicMcast *m = obj;

    RNIC_MIG_CHECK(m->nqp >= 1 && m->nqp <= s->prop.max_mcast_qp_attach,
                   "multicast group", i);
    return 0;
}

/* The shadow SQ slots, the WQE the responder fills, and the completer. */
static int rnic_mig_tp_check(RnicState *s, RnicQP *qp)
{
    RnicTransport *tp = qp->tp;
    uint32_t i;

    RNIC_MIG_CHECK(tp->comp.wait <= RNIC_COMP_RNR_WAIT &&
                   tp->comp.retry_left <= 7 && tp->comp.rnr_left <= 7,
                   "QP (completer)", qp->qpn);
    RNIC_MIG_CHECK(tp->resp.msg <= RNIC_RESP_MSG_WRITE,
                   "QP (responder)", qp->qpn);
    RNIC_MIG_CHECK(!tp->resp.rwqe.valid ||
                   (tp->resp.rwqe.num_sge <= RNIC_RQ_MAX_SGE &&
                    tp->resp.rwqe.off <= tp->resp.rwqe.total),
                   "QP (receive WQE)", qp->qpn);
    for (i = 0; i < RNIC_TP_MAX_INFLIGHT; i++) {
        const RnicSwqe *w = &tp->swqe[i];

        RNIC_MIG_CHECK(w->state <= RNIC_SWQE_ERROR, "QP (send WQE)", qp->qpn);
        if (w->state == RNIC_SWQE_ERROR) {
            /* A failed WQE only completes: its status is all that counts. */
            RNIC_MIG_CHECK(w->status < RNIC_WC_STATUS_MAX, "QP (send WQE)",
                           qp->qpn);
            continue;
        }
        if (w->state == RNIC_SWQE_FREE) {
            continue;
        }
        /* As rnic_req_fetch() accepted it: gathering trusts these. */
        RNIC_MIG_CHECK(w->opcode <= RNIC_WR_FLUSH &&
                       w->num_sge <= RNIC_SQ_MAX_SGE &&
                       w->length <= 0x80000000u &&
                       w->read_off <= w->length &&
                       w->npkts <= RNIC_TP_MAX_MSG_PKTS &&
                       w->av.sgid_index < s->prop.max_gid,
                       "QP (send WQE)", qp->qpn);
        RNIC_MIG_CHECK(!w->inline_data ||
                       (!w->num_sge && w->length <= RNIC_MAX_INLINE),
                       "QP (inline send WQE)", qp->qpn);
    }
    return 0;
}

/* What a QP holds must be what CREATE_QP and MODIFY_QP would accept. */
static int rnic_mig_qp_check(RnicState *s, void *obj, uint32_t i)
{
    RnicQP *qp = obj;
    bool has_srq = qp->flags & RNIC_QP_FLAG_HAS_SRQ;
    bool dbrec = qp->flags & RNIC_QP_FLAG_SQ_DBREC;

    RNIC_MIG_CHECK(qp->qpn == i && s->qp[i] == qp &&
                   rnic_mig_uctx_ok(s, qp->uctx) &&
                   rnic_mig_pd_ok(s, qp->pdn), "QP", i);
    RNIC_MIG_CHECK(qp->send_cqn >= 1 && qp->send_cqn <= s->prop.max_cq &&
                   s->cq[qp->send_cqn].valid &&
                   qp->recv_cqn >= 1 && qp->recv_cqn <= s->prop.max_cq &&
                   s->cq[qp->recv_cqn].valid, "QP", i);
    RNIC_MIG_CHECK(has_srq ? (qp->srqn >= 1 && qp->srqn <= s->prop.max_srq &&
                              s->srq[qp->srqn].valid)
                           : !qp->srqn, "QP", i);
    RNIC_MIG_CHECK(qp->type >= RNIC_QPT_RC && qp->type <= RNIC_QPT_SMI &&
                   (qp->type == RNIC_QPT_SMI) == (i == RNIC_SMI_QPN) &&
                   (qp->type != RNIC_QPT_SMI || s->ib) &&
                   qp->state <= RNIC_QPS_ERR, "QP", i);
    RNIC_MIG_CHECK(!(qp->flags & ~(RNIC_QP_FLAG_SIG_ALL | RNIC_QP_FLAG_HAS_SRQ |
                                   RNIC_QP_FLAG_SQ_DBREC)) &&
                   (!dbrec || s->prop.sq_dbrec), "QP", i);
    RNIC_MIG_CHECK(qp->max_inline <= RNIC_MAX_INLINE &&
                   qp->max_send_sge <= RNIC_SQ_MAX_SGE &&
                   qp->max_recv_sge <= RNIC_RQ_MAX_SGE &&
                   qp->sq.max_sge <= RNIC_SQ_MAX_SGE &&
                   qp->rq.max_sge <= RNIC_RQ_MAX_SGE, "QP", i);
    RNIC_MIG_CHECK(qp->path_mtu >= RNIC_MTU_256 &&
                   qp->path_mtu <= RNIC_MTU_4096 && qp->timeout <= 31 &&
                   qp->retry_cnt <= 7 && qp->rnr_retry <= 7 &&
                   qp->min_rnr_timer <= 31 &&
                   qp->max_rd_atomic <= s->prop.max_rd_atom &&
                   qp->max_dest_rd_atomic <= s->prop.max_rd_atom &&
                   qp->port_num == 1 && qp->pkey_index == 0, "QP", i);
    RNIC_MIG_CHECK(qp->dest_qpn <= RNIC_QPN_MASK &&
                   qp->rq_psn <= RNIC_PSN_MASK && qp->sq_psn <= RNIC_PSN_MASK &&
                   !(qp->access_flags & ~RNIC_ACCESS_ALL) &&
                   rnic_mig_av_ok(s, &qp->av), "QP", i);
    RNIC_MIG_CHECK(rnic_mig_ring_ok(&qp->sq.ring, RNIC_SQ_WQE_SIZE,
                                    dbrec ? 1 : 0, 0, RNIC_WQ_MAX_LOG_SIZE) &&
                   (1u << qp->sq.ring.log_size) <= s->prop.max_qp_wr,
                   "QP (SQ)", i);
    RNIC_MIG_CHECK(has_srq ? rnic_mig_ring_empty(&qp->rq.ring)
                           : (rnic_mig_ring_ok(&qp->rq.ring, RNIC_RQ_WQE_SIZE,
                                               0, 0, RNIC_WQ_MAX_LOG_SIZE) &&
                              (1u << qp->rq.ring.log_size) <=
                              s->prop.max_qp_wr), "QP (RQ)", i);
    RNIC_MIG_CHECK(!qp->rss || (qp->type == RNIC_QPT_RAW_PACKET &&
                                qp->rss->log_tbl_size <= RNIC_RSS_MAX_LOG_TBL),
                   "QP (RSS)", i);
    return rnic_mig_tp_check(s, qp);
}

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
    /* After the entry's fields: the rest (mcast QPNs). */
    int (*put_extra)(QEMUFile *f, RnicState *s, void *obj);
    int (*get_extra)(QEMUFile *f, RnicState *s, void *obj);
    /* Then: is the loaded entry one its commands could have made? */
    int (*check)(RnicState *s, void *obj, uint32_t i);
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

    /* QP 0 is made only on an IB port; charged as CREATE_QP charges it. */
    if ((i == RNIC_SMI_QPN && !s->ib) || s->qp[i] ||
        !rnic_host_mem_charge(s, sizeof(*qp))) {
        return NULL;
    }
    qp = g_new0(RnicQP, 1);
    if (!rnic_tp_qp_init(s, qp)) {
        g_free(qp);
        rnic_host_mem_uncharge(s, sizeof(*qp));
        return NULL;
    }
    qp->qpn = i;
    s->qp[i] = qp;
    return qp;
}

static const RnicMigTable rnic_mig_tables[] = {
    { "uctx", &vmstate_rnic_uctx, rnic_mig_uctx_slot, rnic_mig_uctx_n,
      rnic_mig_uctx_load, .check = rnic_mig_uctx_check },
    { "pd", &vmstate_rnic_pd, rnic_mig_pd_slot, rnic_mig_pd_n,
      rnic_mig_pd_load, .check = rnic_mig_pd_check },
    { "eq", &vmstate_rnic_eq, rnic_mig_eq_slot, rnic_mig_eq_n,
      rnic_mig_eq_load, .check = rnic_mig_eq_check },
    { "cq", &vmstate_rnic_cq, rnic_mig_cq_slot, rnic_mig_cq_n,
      rnic_mig_cq_load, .check = rnic_mig_cq_check },
    { "mr", &vmstate_rnic_mr, rnic_mig_mr_slot, rnic_mig_mr_n,
      rnic_mig_mr_load, .check = rnic_mig_mr_check },
    { "mw", &vmstate_rnic_mw, rnic_mig_mw_slot, rnic_mig_mw_n,
      rnic_mig_mw_load, .check = rnic_mig_mw_check },
    { "srq", &vmstate_rnic_srq, rnic_mig_srq_slot, rnic_mig_srq_n,
      rnic_mig_srq_load, .check = rnic_mig_srq_check },
    { "gid", &vmstate_rnic_gid, rnic_mig_gid_slot, rnic_mig_gid_n,
      rnic_mig_gid_load, .check = rnic_mig_gid_check },
    { "flow", &vmstate_rnic_flow, rnic_mig_flow_slot, rnic_mig_flow_n,
      rnic_mig_flow_load, .check = rnic_mig_flow_check },
    { "mcast", &vmstate_rnic_mcast, rnic_mig_mcast_slot, rnic_mig_mcast_n,
      rnic_mig_mcast_load, rnic_mig_mcast_put, rnic_mig_mcast_get,
      rnic_mig_mcast_check },
    { "qp", &vmstate_rnic_qp, rnic_mig_qp_slot, rnic_mig_qp_n,
      rnic_mig_qp_load, .check = rnic_mig_qp_check },
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

static int rnic_mig_table_get_all(QEMUFile *f, RnicState *s)
{
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
            if (!ret) {
                ret = qemu_file_get_error(f) ?: tb->check(s, obj, i);
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

static int rnic_mig_table_get(QEMUFile *f, void *pv, size_t size,
                              const VMStateField *field)
{
    RnicState *s = pv;
    int ret;

    rnic_mig_dst = s;
    ret = rnic_mig_table_get_all(f, s);
    rnic_mig_dst = NULL;
    return ret;
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

/*
 * The counts that keep an object from being destroyed under its users
 * are the destination's to know: recounted from the objects, and a
 * stream that says otherwise is refused.  Then what the tables loaded
 * before their targets (flow rules, windows of type 2) must find them.
 */
static int rnic_mig_check_refs(RnicState *s)
{
    g_autofree uint32_t *pd = g_new0(uint32_t, s->prop.max_pd + 1);
    g_autofree uint32_t *eq = g_new0(uint32_t, s->prop.max_eq);
    g_autofree uint32_t *cq = g_new0(uint32_t, s->prop.max_cq + 1);
    g_autofree uint32_t *srq = g_new0(uint32_t, s->prop.max_srq + 1);
    g_autofree uint32_t *mw = g_new0(uint32_t, s->prop.max_mr + 1);
    uint32_t i;

    for (i = 1; i <= s->prop.max_cq; i++) {
        if (s->cq[i].valid) {
            eq[s->cq[i].eqn]++;
        }
    }
    for (i = 1; i <= s->prop.max_mr; i++) {
        if (s->mr[i].valid) {
            pd[s->mr[i].pdn]++;
        }
    }
    for (i = 1; i <= s->prop.max_mw; i++) {
        RnicMW *w = &s->mw[i];

        if (!w->valid) {
            continue;
        }
        pd[w->pdn]++;
        if (w->bound) {
            mw[w->mr]++;
            RNIC_MIG_CHECK(w->type == 1 || rnic_qp_get(s, w->qpn), "MW", i);
        }
    }
    for (i = 1; i <= s->prop.max_srq; i++) {
        if (s->srq[i].valid) {
            pd[s->srq[i].pdn]++;
        }
    }
    for (i = 0; i <= s->prop.max_qp + 1; i++) {
        RnicQP *qp = s->qp[i];

        if (qp) {
            pd[qp->pdn]++;
            cq[qp->send_cqn]++;
            cq[qp->recv_cqn]++;
            srq[qp->srqn] += !!qp->srqn;
        }
    }
    for (i = 0; i <= s->prop.max_pd; i++) {
        RNIC_MIG_CHECK(!s->pd[i].valid || s->pd[i].refcnt == pd[i],
                       "PD", i);
    }
    for (i = 0; i < s->prop.max_eq; i++) {
        RNIC_MIG_CHECK(!s->eq[i].valid || s->eq[i].refcnt == eq[i], "EQ", i);
    }
    for (i = 1; i <= s->prop.max_cq; i++) {
        RNIC_MIG_CHECK(!s->cq[i].valid || s->cq[i].refcnt == cq[i], "CQ", i);
    }
    for (i = 1; i <= s->prop.max_srq; i++) {
        RNIC_MIG_CHECK(!s->srq[i].valid || s->srq[i].refcnt == srq[i],
                       "SRQ", i);
    }
    for (i = 1; i <= s->prop.max_mr; i++) {
        RNIC_MIG_CHECK(!s->mr[i].valid || s->mr[i].mw_refs == mw[i], "MR", i);
    }
    for (i = 0; i < s->prop.max_flow; i++) {
        RnicQP *qp = s->flow[i].valid ? rnic_qp_get(s, s->flow[i].qpn) : NULL;

        RNIC_MIG_CHECK(!s->flow[i].valid ||
                       (qp && qp->type == RNIC_QPT_RAW_PACKET),
                       "flow rule", i);
    }
    return 0;
}

/* The registers the data path uses as shifts and indices. */
static int rnic_mig_check_regs(RnicState *s)
{
    uint64_t bytes;

    RNIC_MIG_CHECK(s->sweep_next <= s->prop.max_qp + 1, "sweep position",
                   s->sweep_next);
    RNIC_MIG_CHECK(s->net_vector < s->prop.msix_vectors, "Ethernet vector",
                   s->net_vector);
    if (s->status & RNIC_STATUS_READY) {
        RNIC_MIG_CHECK(s->cmdq_log_size >= 1 &&
                       s->cmdq_log_size <= RNIC_CMDQ_MAX_LOG_SIZE,
                       "CMDQ_LOG_SIZE", s->cmdq_log_size);
        bytes = (uint64_t)RNIC_CMD_ENTRY_SIZE << s->cmdq_log_size;
        RNIC_MIG_CHECK(!(s->cmdq_base & 0xfff) &&
                       s->cmdq_base <= UINT64_MAX - bytes, "command queue", 0);
    }
    /* A ring with entries posted is one the data path will index. */
    if (s->txq_pi != s->txq_ci) {
        RNIC_MIG_CHECK(s->txq_log_size >= 1 &&
                       s->txq_log_size <= RNIC_NET_MAX_LOG_SIZE &&
                       s->txq_pi - s->txq_ci <= (1u << s->txq_log_size),
                       "TXQ", s->txq_log_size);
    }
    if (s->rxq_pi != s->rxq_ci) {
        RNIC_MIG_CHECK(s->rxq_log_size >= 1 &&
                       s->rxq_log_size <= RNIC_NET_MAX_LOG_SIZE &&
                       s->rxq_pi - s->rxq_ci <= (1u << s->rxq_log_size),
                       "RXQ", s->rxq_log_size);
    }
    return 0;
}

static int rnic_post_load(void *opaque, int version_id)
{
    RnicState *s = opaque;
    uint32_t nqp = 0;
    int ret;

    ret = rnic_mig_check_regs(s);
    if (!ret) {
        ret = rnic_mig_check_refs(s);
    }
    if (ret) {
        return ret;
    }

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
    trace_rnic_migrate_loaded(nqp, s->host_mem_used, s->mig_host_mem_src);
    return 0;
}

static int rnic_pre_save(void *opaque)
{
    RnicState *s = opaque;

    /* The VM is stopped, so no device work is on the stack. */
    rnic_pm_run_reset(s);
    s->mig_cq_bits = s->prop.max_cq + 1;
    s->mig_host_mem_src = s->host_mem_used;
    return 0;
}

static bool rnic_cq_bits_ok(void *opaque, int version_id)
{
    RnicState *s = opaque;

    return s->mig_cq_bits == (int32_t)(s->prop.max_cq + 1);
}

/* The IB port's state; an Ethernet device's stream stays as it was. */
static bool rnic_ib_needed(void *opaque)
{
    RnicState *s = opaque;

    return s->ib;
}

/* What indexes arrays or sits in a few bits must fit them. */
static int rnic_ib_post_load(void *opaque, int version_id)
{
    RnicState *s = opaque;
    const RnicIbPort *p = &s->ibp;

    if (p->ntraps > RNIC_SMA_TRAPS) {
        return rnic_mig_refuse("IB port traps", p->ntraps, "<= RNIC_SMA_TRAPS");
    }
    if (p->lmc > 7 || p->sm_sl > 15 || p->mkey_prot > 3 ||
        p->state > RNIC_PORT_ACTIVE) {
        return rnic_mig_refuse("IB port state", p->state,
                               "LMC, SM SL, M_Key protection in range");
    }
    return 0;
}

static const VMStateDescription vmstate_rnic_ib = {
    .name = "rnic/ib",
    .version_id = 2,
    .minimum_version_id = 1,
    .needed = rnic_ib_needed,
    .post_load = rnic_ib_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT8(ibp.state, RnicState),
        VMSTATE_UINT8(ibp.lmc, RnicState),
        VMSTATE_UINT8(ibp.sm_sl, RnicState),
        VMSTATE_UINT8(ibp.mkey_prot, RnicState),
        VMSTATE_UINT16(ibp.lid, RnicState),
        VMSTATE_UINT16(ibp.sm_lid, RnicState),
        VMSTATE_UINT16(ibp.mkey_lease, RnicState),
        VMSTATE_UINT8(ibp.neighbor_mtu, RnicState),
        VMSTATE_UINT8(ibp.subnet_timeout, RnicState),
        VMSTATE_UINT8(ibp.client_rereg, RnicState),
        VMSTATE_UINT8(ibp.resp_time, RnicState),
        VMSTATE_UINT64(ibp.mkey, RnicState),
        VMSTATE_UINT64(ibp.gid_prefix, RnicState),
        VMSTATE_UINT16(ibp.mkey_viol, RnicState),
        VMSTATE_UINT16(ibp.pkey_viol, RnicState),
        VMSTATE_UINT16(ibp.qkey_viol, RnicState),
        VMSTATE_UINT16_ARRAY(ibp.pkey, RnicState, RNIC_PKEY_BLOCK),
        VMSTATE_UINT8_ARRAY(ibp.sl2vl, RnicState, 16),
        VMSTATE_UINT8_2DARRAY(ibp.vlarb, RnicState, 4,
                              RNIC_IB_VLARB_ENTRIES * 2),
        VMSTATE_UINT32(ibp.events, RnicState),
        /* Version 2: what the host set, and the traps not yet taken. */
        VMSTATE_UINT32_V(ibp.cap_host, RnicState, 2),
        VMSTATE_UINT8_ARRAY_V(ibp.node_desc, RnicState, RNIC_SMP_DATA_LEN, 2),
        VMSTATE_UINT8_2DARRAY_V(ibp.traps, RnicState, RNIC_SMA_TRAPS,
                                RNIC_SMP_DATA_LEN, 2),
        VMSTATE_UINT8_V(ibp.ntraps, RnicState, 2),
        VMSTATE_UINT32_V(ibp.trap_tid, RnicState, 2),
        VMSTATE_END_OF_LIST()
    },
};

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
        /*
         * The source's total, for the trace only: the destination charged
         * what it loaded, and frames the source kept for reordering did
         * not come along.
         */
        VMSTATE_UINT64(mig_host_mem_src, RnicState),
        VMSTATE_END_OF_LIST()
    },
    .subsections = (const VMStateDescription * const []) {
        &vmstate_rnic_ib,
        NULL
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
