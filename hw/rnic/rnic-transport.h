/*
 * rnic: RoCEv2 transport -- state private to the transport's files:
 * rnic-transport.c, rnic-req.c, rnic-comp.c, rnic-resp.c, rnic-ooo.c,
 * and rnic-raw.c for its receive queues
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * One RnicTransport hangs off every RnicQP.  It holds three engines:
 *
 *   requester  walks the SQ, copies each WQE once into a shadow slot,
 *              validates the copy and turns it into packets;
 *   completer  consumes ACKs, NAKs and read/atomic responses, retires
 *              shadow slots in SQ order and owns the retry timers;
 *   responder  executes incoming requests against the RQ/SRQ and memory,
 *              sends ACKs/NAKs and read responses.
 *
 * SQ and RQ indices are free-running and compared modulo 2^16, like the
 * doorbells that carry them.
 */
#ifndef HW_RNIC_TRANSPORT_H
#define HW_RNIC_TRANSPORT_H

#include "rnic.h"
#include "rnic-wire.h"

/* WQEs in flight between sq.ci and the fetch pointer (power of two). */
/* QP1's Q_Key is fixed by the spec, whatever MODIFY_QP said. */
#define RNIC_TP_GSI_QKEY            0x80010000u

#define RNIC_TP_MAX_INFLIGHT        64
/* Packets sent and not yet acknowledged before the requester waits. */
#define RNIC_TP_WINDOW              256
/*
 * The congestion window: how much of RNIC_TP_WINDOW an RC requester may
 * use.  A hub segment (socket multicast) or a busy receiving QEMU drops
 * what its socket buffer cannot hold, and go-back-N at a full window
 * then resends the whole window for every drop.  So the window shrinks
 * by a quarter on each loss (a sequence NAK, a gap in read responses or
 * an ACK timeout) and grows by one packet per quarter window
 * acknowledged.  A quarter, not TCP's half: random loss is as common
 * here as an overflowing receiver, and a halved window spends most of
 * its time far below the path's capacity.
 */
#define RNIC_TP_CWND_INIT           64
/*
 * Two AckReq intervals: with a single one in flight, every lost AckReq
 * packet or ACK stalls the QP until the tail-loss probe, while a second
 * one keeps ACKs coming and turns the loss into a sequence NAK.  On a
 * socket-multicast hub with the kernel's default receive buffer
 * (212,992 bytes, about 25 frames of path MTU 4096; patches/qemu/0005
 * asks for 4 MiB) this overfills it at times, which the losses it causes
 * then correct.
 */
#define RNIC_TP_CWND_MIN            (2 * RNIC_TP_ACKREQ_EVERY)
#define RNIC_TP_CWND_GROW_DIV       4
/* The requester asks for an ACK at least this often within a message. */
#define RNIC_TP_ACKREQ_EVERY        16
/* The responder ACKs at least this often even without AckReq. */
#define RNIC_TP_ACK_EVERY           32
/* READ/ATOMIC requests remembered by the responder (power of two). */
#define RNIC_TP_RD_RING             128     /* >= max-rd-atom's cap */
/*
 * The 24-bit PSN space is compared with a +-2^23 window; a message may
 * span at most a quarter of it so that old and new PSNs stay ordered.
 */
#define RNIC_TP_MAX_MSG_PKTS        (1u << 22)
/*
 * Under TCG a few microseconds of virtual time pass in no time at all;
 * a guest asking for a very short local ACK timeout would only cause
 * spurious retransmissions, so the timer never fires sooner than this.
 */
#define RNIC_TP_MIN_ACK_TIMEOUT_NS  (8 * SCALE_MS)
/*
 * Tail-loss probe: when nothing was acknowledged for this long, resend
 * from the oldest unacknowledged PSN once, without spending a retry,
 * before the QP's own (often 67 ms) timeout.  A lost last packet or ACK
 * leaves no later packet to reveal the gap, and with a small congestion
 * window every window ends in such a tail.  Duplicates are harmless: the
 * responder acknowledges them again.
 */
#define RNIC_TP_PROBE_NS            (8 * SCALE_MS)
/*
 * Once round trips were measured, the probe waits for the smoothed
 * round-trip time plus four deviations (RFC 6298's formula), no less
 * than this and no more than RNIC_TP_PROBE_NS.  The floor keeps a jittery
 * TCG host from probing a window that is merely slow.
 */
#define RNIC_TP_PROBE_MIN_NS        (250 * SCALE_US)
/*
 * Probes per stall, each waiting twice as long as the one before, before
 * the QP's own timeout takes over.  A probe resends a whole window, and
 * at a few percent of loss its own last packet is lost now and then:
 * one probe alone would then leave the QP waiting for a full timeout.
 */
#define RNIC_TP_MAX_PROBES          4
/*
 * ECN, in the spirit of DCQCN: a responder answers requests marked CE
 * with a CNP to their requester, at most one per QP in this time; the
 * requester cuts its congestion window by half for the first CNP and
 * ignores the rest until what it had sent by then is acknowledged.
 */
#define RNIC_TP_CNP_GAP_NS          (50 * SCALE_US)
/* Frame buffer: worst-case header stack, a 4 KiB MTU payload, trailer. */
#define RNIC_TP_FRAME_MAX           (RNIC_WIRE_MAX_HLEN + 4096 + \
                                     RNIC_WIRE_MAX_TRAILER + \
                                     RNIC_ETH_MIN_FRAME)
/* UD receive buffers start with room for a GRH. */
#define RNIC_TP_GRH_LEN             40

/* Life of one shadow SQ slot. */
typedef enum RnicSwqeState {
    RNIC_SWQE_FREE = 0,     /* slot not holding a WQE */
    RNIC_SWQE_PENDING,      /* fetched and valid; packets left to send */
    RNIC_SWQE_SENT,         /* every packet sent; waiting for ACK/response */
    RNIC_SWQE_DONE,         /* acknowledged; waits to be retired in order */
    RNIC_SWQE_ERROR,        /* failed with 'status'; retiring it kills the QP */
} RnicSwqeState;

/* Host copy of one SQ WQE plus its transport progress. */
typedef struct RnicSwqe {
    uint8_t state;          /* RnicSwqeState */
    uint8_t opcode;         /* RNIC_WR_* */
    uint8_t flags;          /* RNIC_WQE_* */
    uint8_t num_sge;
    uint8_t status;         /* enum rnic_wc_status once ERROR */
    bool started;           /* first packet sent (fence/credits taken) */
    bool inline_data;
    uint16_t idx;           /* SQ index */
    uint64_t wr_id;
    uint32_t imm_inv;       /* raw WQE bytes: wire order for imm */
    uint32_t rkey;
    uint64_t remote_addr;
    uint64_t compare_add;
    uint64_t swap;
    uint32_t length;        /* message length in bytes */
    uint32_t npkts;         /* PSNs the message occupies */
    uint32_t first_psn;
    uint32_t last_psn;
    uint32_t read_off;      /* READ: bytes of response scattered so far */
    /* REG_MR: the rest is in rkey, imm_inv, remote_addr, compare_add, swap */
    uint32_t fr_npages;
    uint8_t fr_shift;
    /* UD */
    RnicAV av;
    uint32_t ud_qpn;
    uint32_t ud_qkey;
    RnicSge sge[RNIC_SQ_MAX_SGE];
    uint8_t inl[RNIC_MAX_INLINE];
} RnicSwqe;

/* The requester's position in the SQ. */
typedef struct RnicReq {
    uint16_t fetch_idx;     /* next SQ index to copy into a shadow slot */
    uint16_t send_idx;      /* WQE whose packets are being sent */
    uint32_t send_pkt;      /* next packet of that WQE, 0-based */
    uint32_t psn;           /* PSN of the next packet to send */
    uint32_t max_psn;       /* one past the highest PSN ever sent */
    uint32_t noack_pkts;    /* packets since the last AckReq */
    uint32_t rd_outstanding;/* READ/ATOMIC WQEs started, not yet retired */
    uint32_t cwnd;          /* congestion window, packets */
    uint32_t cwnd_psn;      /* comp.psn when cwnd last grew or shrank */
    uint32_t cnp_psn;       /* no CNP cuts cwnd before comp.psn gets here */
    /*
     * Selective repeat: the responder kept what followed a hole, so only
     * [hole, sr_end) is sent again, and then sending goes on from
     * sr_front, where it was.  Not migrated: a destination goes back N.
     */
    bool sr_active;
    uint32_t sr_end;
    uint32_t sr_front;
    uint16_t ip_id;
} RnicReq;

/* Why the completer holds the requester back. */
typedef enum RnicCompWait {
    RNIC_COMP_RUN = 0,      /* requester free to send */
    RNIC_COMP_RNR_WAIT,     /* RNR NAK: resend after rnr_timer */
} RnicCompWait;

typedef struct RnicComp {
    uint32_t psn;           /* oldest PSN not yet acknowledged */
    uint8_t wait;           /* RnicCompWait */
    uint8_t retry_left;     /* from qp->retry_cnt, reset on progress */
    uint8_t rnr_left;       /* from qp->rnr_retry; 7 means infinite */
    bool rewound;           /* a retransmission from 'psn' is under way */
    uint8_t probes;         /* tail-loss probes sent for 'psn' */
    bool sqd_notified;
    /*
     * The ACK timer fired.  Timers run outside the device's re-entrancy
     * guard, so they only record this; rnic_comp_timer_run() acts on it
     * from the bottom half.
     */
    bool ack_expired;
    /*
     * Round-trip estimate for the tail-loss probe: one AckReq packet at a
     * time is timed from its first transmission to the ACK that covers
     * it; a rewind discards the sample, as Karn's rule asks.  Not
     * migrated: a destination starts from the fixed probe time.
     */
    bool rtt_busy;
    uint32_t rtt_psn;
    int64_t rtt_t0;
    int64_t srtt_ns;        /* 0: no sample yet */
    int64_t rttvar_ns;
    QEMUTimer *ack_timer;
    QEMUTimer *rnr_timer;
} RnicComp;

/* The message the responder is in the middle of. */
typedef enum RnicRespMsg {
    RNIC_RESP_MSG_NONE = 0, /* between messages */
    RNIC_RESP_MSG_SEND,     /* SEND_FIRST seen; RQ WQE held in 'rwqe' */
    RNIC_RESP_MSG_WRITE,    /* WRITE_FIRST seen; va/rkey/resid tracked */
} RnicRespMsg;

/* Host copy of the RQ or SRQ WQE a SEND is landing in. */
typedef struct RnicRwqe {
    bool valid;
    bool from_srq;
    uint16_t idx;
    uint16_t slot_mask;     /* for CQE wqe_idx: RQ entries - 1, SRQ all */
    uint8_t num_sge;
    uint64_t wr_id;
    uint64_t total;         /* sum of the SGE lengths */
    uint64_t off;           /* bytes written so far */
    RnicSge sge[RNIC_RQ_MAX_SGE];
} RnicRwqe;

/* A READ or ATOMIC request the responder accepted. */
typedef struct RnicRdReq {
    bool valid;
    bool atomic;
    bool place;             /* FLUSH or ATOMIC WRITE: one empty response */
    bool pending;           /* responses still to be generated */
    bool replay;            /* pending again for a duplicate request */
    uint32_t psn;           /* first PSN of the request */
    uint32_t npkts;
    uint64_t va;            /* READ: start of the original request */
    uint32_t rkey;
    uint32_t len;
    /* Generation cursor: may restart mid-way on a duplicate request. */
    uint32_t cur_psn;
    uint64_t cur_va;
    uint32_t cur_len;       /* bytes left to send */
    bool cur_first;         /* next response is the first of this run */
    uint64_t atomic_orig;   /* ATOMIC: value returned, kept for replay */
} RnicRdReq;

typedef struct RnicResp {
    uint32_t epsn;          /* next PSN expected */
    uint32_t msn;
    bool nak_sent;          /* one NAK per gap (sequence or RNR) */
    uint32_t ahead_max;     /* highest PSN seen since the last in order */
    int64_t cnp_next_ns;    /* virtual time before which no CNP goes out */
    bool comm_est;          /* COMM_EST raised */
    uint8_t msg;            /* RnicRespMsg */
    uint32_t pkts_since_ack;
    bool ack_owed;          /* on RnicState.ack_owed until the batch ends */
    RnicRwqe rwqe;
    bool write_imm;         /* WRITE message ends with immediate data */
    uint64_t write_va;
    uint32_t write_rkey;
    uint32_t write_resid;
    uint32_t write_len;     /* dma_len of the whole WRITE */
    /* Replay ring and queued responses, served oldest first. */
    RnicRdReq rd[RNIC_TP_RD_RING];
    uint32_t rd_head;       /* next slot to fill */
    /* An ACK/NAK held back until queued read responses have gone out. */
    bool ack_deferred;
    uint8_t ack_syndrome;
    uint8_t ack_hole;       /* selective NAK: the hole's length */
    uint32_t ack_psn;
} RnicResp;

/*
 * The responder's reorder buffer, for selective repeat: requests that
 * arrive past a gap from a requester that sets RNIC_BTH_X_SR are kept,
 * parsed, in the slot of their PSN, and run in order once the gap is
 * filled.  Allocated at the first such request; not migrated (the
 * requester then resends them).
 */
#define RNIC_OOO_SLOTS              128     /* PSNs past epsn, power of two */
/*
 * Frames all QPs of a device may keep at once: each is at most a path MTU
 * (4096) plus headers, so about 4.3 MiB, and each is charged to
 * max-host-mem as well.
 */
#define RNIC_OOO_DEV_FRAMES         1024
/* Frames one QP may keep: no QP, real or spoofed, takes the whole pool. */
#define RNIC_OOO_QP_FRAMES          64
/* Room for the headers of a kept frame besides its payload (path MTU). */
#define RNIC_OOO_HDR_ROOM           192
/*
 * A kept frame older than this (virtual time) is given up: the gap before
 * it was never filled, so its requester has long since gone back to it.
 * Frames on idle QPs would otherwise hold the pool for ever.
 */
#define RNIC_OOO_MAX_AGE_NS         (100 * 1000 * 1000)
/* How often the whole device is swept for such frames, at most. */
#define RNIC_OOO_SWEEP_NS           (10 * 1000 * 1000)

typedef struct RnicOooSlot {
    uint8_t *frame;         /* NULL: empty */
    uint32_t len;           /* also the bytes charged to max-host-mem */
    int64_t kept_ns;        /* virtual clock when it was kept */
    uint32_t flags;         /* RNIC_HDR_* | RNIC_OPF_* of the opcode */
    RnicPkt pkt;            /* parsed; its offsets point into 'frame' */
} RnicOooSlot;

typedef struct RnicOoo {
    uint32_t count;         /* slots in use */
    bool draining;
    RnicOooSlot slot[RNIC_OOO_SLOTS];
} RnicOoo;

struct RnicTransport {
    RnicState *s;
    RnicQP *qp;
    RnicReq req;
    RnicComp comp;
    RnicResp resp;
    RnicOoo *ooo;           /* NULL until a request arrives past a gap */
    RnicSwqe swqe[RNIC_TP_MAX_INFLIGHT];
};

/*
 * Work requests whose completion comes from a response packet rather than
 * an ACK, and which count against max_rd_atomic: READ and the atomics,
 * and FLUSH and ATOMIC WRITE (answered by an empty READ response).
 */
static inline bool rnic_wr_is_rd_atomic(uint8_t op)
{
    return op == RNIC_WR_RDMA_READ || op == RNIC_WR_ATOMIC_CMP_SWP ||
           op == RNIC_WR_ATOMIC_FETCH_ADD || op == RNIC_WR_ATOMIC_WRITE ||
           op == RNIC_WR_FLUSH;
}

/* The memory-placement requests, answered by an empty READ response. */
static inline bool rnic_wr_is_place(uint8_t op)
{
    return op == RNIC_WR_ATOMIC_WRITE || op == RNIC_WR_FLUSH;
}

static inline RnicSwqe *rnic_tp_swqe(RnicTransport *tp, uint16_t idx)
{
    return &tp->swqe[idx & (RNIC_TP_MAX_INFLIGHT - 1)];
}

/* Free-running 16-bit index distance a - b. */
static inline uint16_t rnic_idx_diff(uint16_t a, uint16_t b)
{
    return (uint16_t)(a - b);
}

static inline uint32_t rnic_tp_mtu(RnicQP *qp)
{
    uint32_t mtu = rnic_mtu_to_bytes(qp->path_mtu);

    return mtu ? mtu : 1024;
}

/* Packets a message of 'len' bytes takes (at least one). */
static inline uint32_t rnic_tp_npkts(uint64_t len, uint32_t mtu)
{
    return len ? (uint32_t)((len + mtu - 1) / mtu) : 1;
}

/* rnic-transport.c: the link layer under the dispatcher. */
/*
 * Fills addressing (L2/L3/L4) of a packet from the QP's GID entry and
 * 'av'; false if the source GID is unusable.
 */
bool rnic_tp_pkt_init(RnicState *s, RnicQP *qp, const RnicAV *av,
                      RnicPkt *p);
/* Builds and sends one packet; 'payload' may be NULL if payload_len is 0. */
bool rnic_tp_xmit(RnicState *s, RnicQP *qp, RnicPkt *p, const void *payload);

/* rnic-req.c */
void rnic_req_rewind(RnicState *s, RnicQP *qp, uint32_t psn);
/*
 * Selective repeat: resends the 'n' packets from 'psn' (the oldest
 * unacknowledged), then goes on from 'front', where sending was.
 */
void rnic_req_resend_hole(RnicState *s, RnicQP *qp, uint32_t psn,
                          uint32_t n, uint32_t front);
void rnic_req_run(RnicState *s, RnicQP *qp, int *budget);
void rnic_req_reset(RnicTransport *tp);
uint8_t rnic_wr_to_wc_opcode(uint8_t wr_opcode);

/* rnic-comp.c */
void rnic_comp_init_timers(RnicTransport *tp);
void rnic_comp_reset(RnicTransport *tp);
void rnic_comp_rx(RnicState *s, RnicQP *qp, const RnicPkt *p,
                  const uint8_t *frame);
/* A congestion notification for this requester. */
void rnic_comp_cnp(RnicState *s, RnicQP *qp);
/* Retires finished WQEs from sq.ci in order, writing their CQEs. */
void rnic_comp_advance(RnicState *s, RnicQP *qp);
/* (Re)arms the local ACK timer if packets are outstanding. */
void rnic_comp_arm_ack_timer(RnicState *s, RnicQP *qp);
/* Times the round trip of the AckReq packet 'psn' unless one is timed. */
void rnic_comp_rtt_start(RnicTransport *tp, uint32_t psn);
void rnic_comp_stop_timers(RnicTransport *tp);
/* Handles an expired ACK timer (bottom half only). */
void rnic_comp_timer_run(RnicState *s, RnicQP *qp);
/* Both flushes stop when *budget reaches 0 and resume on the next run. */
void rnic_sq_flush(RnicState *s, RnicQP *qp, int *budget);

/* rnic-resp.c */
void rnic_resp_reset(RnicTransport *tp);
/* The end of a receive batch: sends the ACKs its requests asked for. */
void rnic_resp_flush_owed_acks(RnicState *s);
/* A request arrived marked CE (the dispatcher saw it in the IP header). */
void rnic_resp_ce(RnicState *s, RnicQP *qp);
/*
 * Receive WQEs, shared with the raw packet QPs of rnic-raw.c: they fill
 * their RQ as the responder fills an RC/UC/UD one, frame or payload.
 */
typedef enum RnicRwqeGet {
    RNIC_RWQE_OK,
    RNIC_RWQE_NONE,         /* nothing posted: RNR */
    RNIC_RWQE_BAD,          /* completed in error, QP moved to ERR */
} RnicRwqeGet;
/* Copies the next RQ (or SRQ) WQE into resp.rwqe and validates it. */
RnicRwqeGet rnic_resp_get_rwqe(RnicState *s, RnicQP *qp);
/* Posts the receive CQE of resp.rwqe and consumes the WQE. */
void rnic_resp_recv_cqe(RnicState *s, RnicQP *qp, struct rnic_cqe *cqe);
/* Completes the held receive WQE with an error status. */
void rnic_resp_recv_err(RnicState *s, RnicQP *qp, uint8_t status);
void rnic_resp_run(RnicState *s, RnicQP *qp, int *budget);
void rnic_rq_flush(RnicState *s, RnicQP *qp, int *budget);
/* Runs one request for an RC/UC/UD responder; rnic-ooo.c replays with it. */
void rnic_resp_request(RnicState *s, RnicQP *qp, const RnicPkt *p,
                       const uint8_t *frame, size_t len, uint32_t flags);
/* Sends a PSN sequence NAK for epsn, naming the hole if frames are kept. */
void rnic_resp_nak_seq(RnicState *s, RnicQP *qp);

/* rnic-ooo.c */
/* Keeps a request 'diff' PSNs past epsn if selective repeat allows it. */
bool rnic_ooo_keep(RnicState *s, RnicQP *qp, const RnicPkt *p,
                   const uint8_t *frame, size_t len, uint32_t flags,
                   int32_t diff);
/* Packets from epsn to the first kept one (0: none kept), at most 63. */
uint8_t rnic_ooo_hole(RnicTransport *tp);
/* Runs the kept requests that are in order now. */
void rnic_ooo_drain(RnicState *s, RnicQP *qp);
/* Drops every kept request (QP reset, new rq_psn). */
void rnic_ooo_clear(RnicTransport *tp);
/* And the buffer itself (QP destroyed). */
void rnic_ooo_free(RnicTransport *tp);

#endif /* HW_RNIC_TRANSPORT_H */
