/*
 * rnic: rnic-inject-fault when the device is not built
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qapi/qapi-commands-rnic.h"

void qmp_rnic_inject_fault(RnicFaultSpec *f, Error **errp)
{
    error_setg(errp, "this QEMU has no rnic device");
}
