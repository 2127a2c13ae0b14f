/*
 * rnic: RoCEv2 transport (req)
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "rnic.h"

bool rnic_tp_qp_init(RnicState *s, RnicQP *qp)
{
    return true;
}

void rnic_tp_qp_fini(RnicState *s, RnicQP *qp)
{
}

void rnic_tp_qp_modified(RnicState *s, RnicQP *qp, uint8_t old_state,
                         uint32_t attr_mask)
{
}

void rnic_tp_qp_flush(RnicState *s, RnicQP *qp)
{
}

void rnic_tp_qp_run(RnicState *s, RnicQP *qp, int *budget)
{
}
