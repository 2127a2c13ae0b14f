/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic: management datagram and subnet management packet layouts
 *
 * Offsets and codes of the IBA management classes that the device's and
 * the emulated switch's subnet management agents use.  All MAD fields are
 * big-endian on the wire; offsets are in bytes from the start of the MAD
 * (the 256 bytes after the DETH), or of an attribute's data.
 */

#ifndef HW_RNIC_RNIC_SMP_H
#define HW_RNIC_RNIC_SMP_H

#define RNIC_MAD_LEN                256
#define RNIC_SMP_DATA_LEN           64
/* The Q_Key every GSI (QP1) MAD carries; QP0 ignores it. */
#define RNIC_QKEY_GSI               0x80010000u

/* Common MAD header */
#define RNIC_MAD_BASE_VERSION       0
#define RNIC_MAD_MGMT_CLASS         1
#define RNIC_MAD_CLASS_VERSION      2
#define RNIC_MAD_METHOD             3
#define RNIC_MAD_STATUS             4   /* 16 bits; DR SMPs: D bit on top */
#define RNIC_MAD_HOP_PTR            6   /* DR SMPs */
#define RNIC_MAD_HOP_CNT            7   /* DR SMPs */
#define RNIC_MAD_TID                8
#define RNIC_MAD_ATTR_ID            16
#define RNIC_MAD_ATTR_MOD           20

/* SMP body */
#define RNIC_SMP_MKEY               24
#define RNIC_SMP_DR_SLID            32
#define RNIC_SMP_DR_DLID            34
#define RNIC_SMP_DATA               64
#define RNIC_SMP_INITIAL_PATH       128
#define RNIC_SMP_RETURN_PATH        192
#define RNIC_SMP_MAX_HOPS           63

#define RNIC_MGMT_CLASS_SUBN_LID    0x01
#define RNIC_MGMT_CLASS_SUBN_ADM    0x03
#define RNIC_MGMT_CLASS_PERF        0x04
#define RNIC_MGMT_CLASS_SUBN_DR     0x81

#define RNIC_MAD_METHOD_GET         0x01
#define RNIC_MAD_METHOD_SET         0x02
#define RNIC_MAD_METHOD_TRAP        0x05
#define RNIC_MAD_METHOD_TRAP_REPRESS 0x07
#define RNIC_MAD_METHOD_RESP        0x80    /* the response bit */

#define RNIC_SMP_DIRECTION          0x8000  /* D: returning to the SM */
/* MAD status, bits 4:2 "invalid field" */
#define RNIC_MAD_STATUS_BAD_VERSION 0x0004
#define RNIC_MAD_STATUS_BAD_METHOD  0x0008
#define RNIC_MAD_STATUS_BAD_ATTR    0x000c  /* method/attribute unsupported */
#define RNIC_MAD_STATUS_BAD_VALUE   0x001c  /* invalid attribute or modifier */

/* Subnet management attributes */
#define RNIC_SMP_ATTR_NOTICE        0x0002
#define RNIC_SMP_ATTR_NODE_DESC     0x0010
#define RNIC_SMP_ATTR_NODE_INFO     0x0011
#define RNIC_SMP_ATTR_SWITCH_INFO   0x0012
#define RNIC_SMP_ATTR_GUID_INFO     0x0014
#define RNIC_SMP_ATTR_PORT_INFO     0x0015
#define RNIC_SMP_ATTR_PKEY_TABLE    0x0016
#define RNIC_SMP_ATTR_SL2VL_TABLE   0x0017
#define RNIC_SMP_ATTR_VL_ARB_TABLE  0x0018
#define RNIC_SMP_ATTR_LFT           0x0019
#define RNIC_SMP_ATTR_MFT           0x001b
#define RNIC_SMP_ATTR_SM_INFO       0x0020

/* NodeInfo */
#define RNIC_NI_BASE_VERSION        0
#define RNIC_NI_CLASS_VERSION       1
#define RNIC_NI_NODE_TYPE           2
#define RNIC_NI_NUM_PORTS           3
#define RNIC_NI_SYS_GUID            4
#define RNIC_NI_NODE_GUID           12
#define RNIC_NI_PORT_GUID           20
#define RNIC_NI_PARTITION_CAP       28
#define RNIC_NI_DEVICE_ID           30
#define RNIC_NI_REVISION            32
#define RNIC_NI_LOCAL_PORT          36
#define RNIC_NI_VENDOR_ID           37  /* 24 bits */
#define RNIC_NODE_TYPE_CA           1
#define RNIC_NODE_TYPE_SWITCH       2

/* SwitchInfo */
#define RNIC_SI_LFT_CAP             0
#define RNIC_SI_RFT_CAP             2
#define RNIC_SI_MFT_CAP             4
#define RNIC_SI_LFT_TOP             6
#define RNIC_SI_DEFAULT_PORT        8
#define RNIC_SI_DEF_MCAST_PRI       9
#define RNIC_SI_DEF_MCAST_NOT_PRI   10
#define RNIC_SI_LIFE_PSC            11  /* LifeTime 7:3, PortStateChange 2 */
#define RNIC_SI_LIDS_PER_PORT       12
#define RNIC_SI_PART_ENF_CAP        14
#define RNIC_SI_FLAGS               16  /* enforcement caps, EnhancedPort0 */
#define RNIC_SI_MFT_TOP             18

/* PortInfo */
#define RNIC_PI_MKEY                0
#define RNIC_PI_GID_PREFIX          8
#define RNIC_PI_LID                 16
#define RNIC_PI_SM_LID              18
#define RNIC_PI_CAP_MASK            20
#define RNIC_PI_DIAG_CODE           24
#define RNIC_PI_MKEY_LEASE          26
#define RNIC_PI_LOCAL_PORT          28
#define RNIC_PI_WIDTH_ENABLED       29
#define RNIC_PI_WIDTH_SUPPORTED     30
#define RNIC_PI_WIDTH_ACTIVE        31
#define RNIC_PI_SPEED_SUP_STATE     32  /* SpeedSupported 7:4, State 3:0 */
#define RNIC_PI_PHYS_DOWNDEF        33  /* PhysState 7:4, DownDefault 3:0 */
#define RNIC_PI_MKEYPROT_LMC        34  /* MKeyProtect 7:6, LMC 2:0 */
#define RNIC_PI_SPEED_ACT_EN        35  /* SpeedActive 7:4, Enabled 3:0 */
#define RNIC_PI_NMTU_SMSL           36  /* NeighborMTU 7:4, MasterSMSL 3:0 */
#define RNIC_PI_VLCAP_INIT          37  /* VLCap 7:4, InitType 3:0 */
#define RNIC_PI_VL_HIGH_LIMIT       38
#define RNIC_PI_VLARB_HIGH_CAP      39
#define RNIC_PI_VLARB_LOW_CAP       40
#define RNIC_PI_INITREPLY_MTUCAP    41  /* InitTypeReply 7:4, MTUCap 3:0 */
#define RNIC_PI_STALL_HOQ           42  /* VLStallCount 7:5, HOQLife 4:0 */
#define RNIC_PI_OPVLS_ENF           43  /* OperationalVLs 7:4, enforce 3:0 */
#define RNIC_PI_MKEY_VIOL           44
#define RNIC_PI_PKEY_VIOL           46
#define RNIC_PI_QKEY_VIOL           48
#define RNIC_PI_GUID_CAP            50
#define RNIC_PI_REREG_TIMEOUT       51  /* ClientRereg 7, SubnetTimeOut 4:0 */
#define RNIC_PI_RESP_TIME           52  /* RespTimeValue 4:0 */
#define RNIC_PI_ERR_THRESHOLDS      53  /* LocalPhyErrors 7:4, Overrun 3:0 */

/* PortInfo:CapabilityMask bits */
#define RNIC_PI_CAP_IS_SM               (1u << 1)
#define RNIC_PI_CAP_IS_NOTICE           (1u << 2)
#define RNIC_PI_CAP_IS_TRAP             (1u << 3)
#define RNIC_PI_CAP_IS_SL_MAPPING       (1u << 6)
#define RNIC_PI_CAP_IS_SYS_IMAGE_GUID   (1u << 11)
#define RNIC_PI_CAP_IS_CM               (1u << 16)
#define RNIC_PI_CAP_IS_DEVICE_MGMT      (1u << 19)
#define RNIC_PI_CAP_IS_CLIENT_REREG     (1u << 25)

/* SLtoVLMappingTable modifier: apply to every output/input port. */
#define RNIC_SL2VL_ALL_OUT          (1u << 16)
#define RNIC_SL2VL_ALL_IN           (1u << 17)

/* Notice (traps) */
#define RNIC_NOTICE_GENERIC_TYPE    0   /* IsGeneric 7, Type 6:0 */
#define RNIC_NOTICE_PRODUCER        1   /* 24 bits */
#define RNIC_NOTICE_TRAP_NUM        4
#define RNIC_NOTICE_ISSUER_LID      6
#define RNIC_NOTICE_TOGGLE_COUNT    8
#define RNIC_NOTICE_DETAILS         10
#define RNIC_NOTICE_TYPE_SECURITY   2
#define RNIC_NOTICE_TYPE_INFO       4
#define RNIC_NOTICE_GENERIC         0x80
#define RNIC_TRAP_LINK_STATE_CHANGE 128
#define RNIC_TRAP_LOCAL_CHANGES     144
#define RNIC_TRAP_BAD_MKEY          256
#define RNIC_TRAP_BAD_PKEY          257
#define RNIC_TRAP_BAD_QKEY          258
/* Trap 144's details: LocalChanges and ChangeFlags. */
#define RNIC_TRAP144_OTHER_LOCAL    0x01
#define RNIC_TRAP144_NODE_DESC      0x0001

/* Blocks */
#define RNIC_LFT_BLOCK              64      /* LIDs per LFT block */
#define RNIC_MFT_BLOCK              32      /* MLIDs per MFT block */
#define RNIC_MFT_POSITION_PORTS     16      /* ports per MFT position */
#define RNIC_PKEY_BLOCK             32      /* P_Keys per block */

#endif
