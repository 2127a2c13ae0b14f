/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic-ibswitch: an emulated InfiniBand switch for rnic fabrics
 *
 * The switch is part of the emulated hardware: each external port is the
 * far end of one QEMU netdev (docs/infiniband.md), port 0 is the switch's
 * management port with its subnet management agent (SMA).  This header is
 * the switch's core, free of sockets, so the unit tests drive it frame
 * by frame:
 *
 *   ibsw_input()       a frame arrived on an external port
 *   ibsw_peek()/_pop() the frames an external port has to send
 *   ibsw_link()        a peer came or went on an external port
 *
 * Flow control is credit based, as on an IB link: each output port holds
 * at most `credits` frames.  A frame that finds its output full is held
 * at its input port, and the caller stops reading that port until
 * ibsw_input_held() says false again.  Nothing is dropped for congestion.
 */

#ifndef RNIC_IBSWITCH_H
#define RNIC_IBSWITCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IBSW_MAX_PORTS          36
/* Ethernet header (14) + the longest IB packet PktLen allows + VCRC. */
#define IBSW_FRAME_MAX          (14 + 0x7ff * 4 + 2)
#define IBSW_CREDITS_DEFAULT    32
#define IBSW_CREDITS_MAX        1024

/* Unicast LIDs the linear forwarding table can hold: all of them. */
#define IBSW_LFT_CAP            0xc000
/* Multicast LIDs the multicast forwarding table can hold, from 0xc000. */
#define IBSW_MFT_CAP            1024
/* An LFT entry that forwards nowhere. */
#define IBSW_PORT_NONE          0xff

/* PortInfo.PortState */
enum {
    IBSW_PS_NOP = 0,
    IBSW_PS_DOWN = 1,
    IBSW_PS_INIT = 2,
    IBSW_PS_ARMED = 3,
    IBSW_PS_ACTIVE = 4,
};

/* PortInfo.PortPhysicalState */
enum {
    IBSW_PHYS_SLEEP = 1,
    IBSW_PHYS_POLLING = 2,
    IBSW_PHYS_DISABLED = 3,
    IBSW_PHYS_LINKUP = 5,
};

/* Why a frame was dropped; each has a counter per input port. */
typedef enum IbswDrop {
    IBSW_DROP_MALFORMED,        /* not an rnic IB frame, or failed a CRC */
    IBSW_DROP_PORT_STATE,       /* data on a port that is not ARMED/ACTIVE */
    IBSW_DROP_UNKNOWN_DLID,     /* no LFT/MFT entry, or DLID out of range */
    IBSW_DROP_OUT_STATE,        /* the output port is not ACTIVE */
    IBSW_DROP_LOOP,             /* unicast back out of its input port */
    IBSW_DROP_SMP,              /* an SMP the DR rules or the SMA refused */
    IBSW_DROP_NO_AGENT,         /* a non-SMP for port 0: no GSI agent here */
    IBSW_DROP__MAX,
} IbswDrop;

typedef struct IbswCounters {
    uint64_t rx_pkts, rx_bytes;
    uint64_t tx_pkts, tx_bytes;
    uint64_t drops[IBSW_DROP__MAX];
    uint64_t held;              /* frames that waited for credits */
} IbswCounters;

typedef struct IbswFrame {
    uint16_t len;
    uint8_t data[IBSW_FRAME_MAX];
} IbswFrame;

typedef struct IbswPort {
    bool linked;                /* a peer is on the other end */
    uint8_t state;              /* IBSW_PS_* */
    uint8_t phys;               /* IBSW_PHYS_* */
    uint8_t neighbor_mtu;       /* IB MTU code set by the SM */
    uint8_t op_vls;
    uint8_t vl_high_limit;
    uint8_t init_type;
    uint8_t lmc;                /* port 0 only */
    uint16_t lid;               /* port 0 only */
    uint16_t sm_lid;            /* port 0 only */
    uint8_t sm_sl;              /* port 0 only */
    uint8_t subnet_timeout;     /* port 0 only */
    uint8_t local_phy_errors;
    uint8_t overrun_errors;
    uint8_t hoq_life;
    uint8_t vl_stall;
    uint64_t m_key;             /* port 0 only */
    uint64_t subnet_prefix;     /* port 0 only */
    uint16_t m_key_lease;       /* port 0 only */
    uint8_t m_key_protect;      /* port 0 only */
    uint8_t link_down_default;
    uint8_t link_width_enabled;
    uint8_t link_speed_enabled;
    uint8_t sl2vl[8];           /* SLtoVLMappingTable, two SLs a byte */
    uint8_t vlarb[4][64];       /* VLArbitrationTable blocks 1..4 */
    uint16_t pkeys[32];         /* P_KeyTable block 0 */
    IbswCounters c;

    /* Output: a ring of frames waiting to leave through this port. */
    IbswFrame **q;
    unsigned q_head, q_len;

    /* Input: a frame that found its output(s) full, and where it goes. */
    IbswFrame *held;
    uint64_t held_mask;
} IbswPort;

typedef struct IbswConfig {
    unsigned nports;            /* external ports, 1..IBSW_MAX_PORTS */
    unsigned credits;           /* frames an output port holds */
    uint64_t guid;              /* node GUID; port GUID of port 0 */
    char desc[64];              /* NodeDescription */
} IbswConfig;

typedef struct IbSwitch {
    IbswConfig cfg;
    uint8_t mac[6];
    IbswPort port[IBSW_MAX_PORTS + 1];  /* [0] is the management port */
    uint8_t lft[IBSW_LFT_CAP];
    uint16_t lft_top;                   /* SwitchInfo.LinearFDBTop */
    uint16_t mft_top;                   /* SwitchInfo.MulticastFDBTop */
    uint64_t mft[IBSW_MFT_CAP];         /* port mask per multicast LID */
    uint8_t default_port;
    uint8_t life_time;                  /* SwitchInfo.LifeTimeValue */
    bool port_state_change;             /* SwitchInfo.PortStateChange */
    uint64_t sma_gets, sma_sets, sma_errors, traps_sent;
    IbswFrame scratch;
} IbSwitch;

typedef enum IbswResult {
    IBSW_TAKEN,         /* forwarded, answered or dropped (and counted) */
    IBSW_HELD,          /* waiting for credits: stop reading this port */
} IbswResult;

int ibsw_init(IbSwitch *sw, const IbswConfig *cfg);
void ibsw_cleanup(IbSwitch *sw);

IbswResult ibsw_input(IbSwitch *sw, unsigned port,
                      const uint8_t *frame, size_t len);
bool ibsw_input_held(const IbSwitch *sw, unsigned port);

const IbswFrame *ibsw_peek(const IbSwitch *sw, unsigned port);
void ibsw_pop(IbSwitch *sw, unsigned port);

void ibsw_link(IbSwitch *sw, unsigned port, bool up);

const char *ibsw_drop_str(IbswDrop d);

/*
 * Internal, shared by ibswitch.c and ibswitch-sma.c.
 *
 * ibsw_smp() handles a subnet management packet (VL15, QP0) that came in
 * on IN_PORT: it applies the directed-route rules, answers what is for
 * the SMA and rewrites F (the frame, in place) into what must go out.
 * It returns the mask of output ports for F, or 0 when nothing goes out
 * (the SMP was refused and counted).  Bit 0 of a mask is never set.
 */
uint64_t ibsw_smp(IbSwitch *sw, unsigned in_port, IbswFrame *f);
/* Build a Trap 128 (link state change) for the SM into F; 0 if no SM. */
uint64_t ibsw_trap_port_change(IbSwitch *sw, IbswFrame *f);
/* The out port for unicast DLID, or IBSW_PORT_NONE. */
unsigned ibsw_route_ucast(const IbSwitch *sw, uint16_t dlid);

#endif
