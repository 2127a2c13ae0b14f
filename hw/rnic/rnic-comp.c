/*
 * rnic: RoCEv2 transport (comp)
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "rnic.h"
