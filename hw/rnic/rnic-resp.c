/*
 * rnic: RoCEv2 transport (resp)
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "rnic.h"

void rnic_tp_rx(RnicState *s, const uint8_t *frame, size_t len)
{
    s->cnt[RNIC_CNT_RX_DROPPED]++;
}
