/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Stand-in for QEMU's qemu/osdep.h so that the pure rnic logic can be
 * unit tested without a QEMU tree.  Provides only the standard headers
 * and the handful of QEMU macros that logic relies on.
 */

#ifndef RNIC_TEST_SHIM_QEMU_OSDEP_H
#define RNIC_TEST_SHIM_QEMU_OSDEP_H

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#define QEMU_BUILD_BUG_ON(x) _Static_assert(!(x), "not expecting: " #x)

#ifndef MIN
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#endif
#ifndef MAX
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#endif
#ifndef ARRAY_SIZE
#define ARRAY_SIZE(x) (sizeof(x) / sizeof((x)[0]))
#endif

#endif
