# SPDX-License-Identifier: GPL-2.0-or-later
"""
Completion timestamps and the device clock: RC traffic on extended CQs
created with IBV_WC_EX_WITH_COMPLETION_TIMESTAMP.  Every completion's
timestamp lies between two ibv_query_rt_values_ex() readings of the
device clock taken before the work was posted and after it completed,
and a CQ's timestamps never go back.  The clock runs at hca_core_clock.
A device without completion timestamps (rxe) skips.  A module of
rdma-core's pyverbs test package: rnic-pyverbs copies it in with --extra.
"""
import errno
import time
import unittest

from pyverbs.cq import CqInitAttrEx, CQEX, PollCqAttr
from pyverbs.pyverbs_error import PyverbsRDMAError
from tests.base import RCResources, RDMATestCase
import pyverbs.enums as e
import tests.utils as u

POLL_TIMEOUT = 10


def raw_clock(ctx):
    """The device clock, in its own ticks."""
    try:
        sec, nsec = ctx.query_rt_values_ex()
    except PyverbsRDMAError as ex:
        if ex.error_code == errno.EOPNOTSUPP:
            raise unittest.SkipTest('ibv_query_rt_values_ex is not supported')
        raise ex
    # Providers put the raw count in tv_nsec; add tv_sec in case.
    return sec * 1000000000 + nsec


def poll_one(cq):
    """One completion of cq: its status, wr_id and timestamp."""
    attr = PollCqAttr()
    start = time.monotonic()
    ret = cq.start_poll(attr)
    while ret == errno.ENOENT:
        if time.monotonic() - start > POLL_TIMEOUT:
            raise PyverbsRDMAError('No completion in time')
        ret = cq.start_poll(attr)
    if ret != 0:
        raise PyverbsRDMAError('Failed to poll CQ', ret)
    try:
        return cq.status, cq.wr_id, cq.read_timestamp()
    finally:
        cq.end_poll()


class TimestampRC(RCResources):
    """An RC QP whose CQ reports completion timestamps."""

    def create_cq(self):
        wc_flags = e.IBV_WC_STANDARD_FLAGS | \
            e.IBV_WC_EX_WITH_COMPLETION_TIMESTAMP
        cia = CqInitAttrEx(cqe=self.num_msgs, wc_flags=wc_flags)
        try:
            self.cq = CQEX(self.ctx, cia)
        except PyverbsRDMAError as ex:
            if ex.error_code == errno.EOPNOTSUPP:
                raise unittest.SkipTest('Completion timestamps are not '
                                        'supported')
            raise ex


class CompletionTimestampTest(RDMATestCase):
    def setUp(self):
        super().setUp()
        self.iters = 50

    def test_rc_completion_timestamps(self):
        self.create_players(TimestampRC)
        attr = self.client.ctx.query_device_ex()
        self.assertGreater(attr.hca_core_clock, 0)
        self.assertNotEqual(attr.completion_timestamp_mask, 0)
        mask = attr.completion_timestamp_mask
        first = raw_clock(self.client.ctx) & mask
        last_send = last_recv = first
        recv_wr = u.get_recv_wr(self.server)
        for i in range(self.iters):
            before = raw_clock(self.client.ctx) & mask
            u.post_recv(self.server, recv_wr)
            send_wr, _ = u.get_send_elements(self.client, False)
            send_wr.wr_id = i
            u.send(self.client, send_wr, e.IBV_WR_SEND)
            s_status, s_id, s_ts = poll_one(self.client.cq)
            r_status, _, r_ts = poll_one(self.server.cq)
            after = raw_clock(self.server.ctx) & mask
            self.assertEqual(s_status, e.IBV_WC_SUCCESS)
            self.assertEqual(r_status, e.IBV_WC_SUCCESS)
            self.assertEqual(s_id, i)
            for what, ts in (('send', s_ts), ('recv', r_ts)):
                self.assertLessEqual(before, ts, f'{what} {i}: completed '
                                     f'at {ts}, before it was posted')
                self.assertLessEqual(ts, after, f'{what} {i}: completed '
                                     f'at {ts}, after it was polled')
            self.assertGreaterEqual(s_ts, last_send)
            self.assertGreaterEqual(r_ts, last_recv)
            last_send, last_recv = s_ts, r_ts
        # The clock really ran while the traffic did.
        self.assertGreater(last_send, first)

    def test_raw_clock_rate(self):
        """The clock ticks hca_core_clock kHz, against the guest's clock."""
        self.create_players(TimestampRC)
        khz = self.client.ctx.query_device_ex().hca_core_clock
        t0, c0 = time.monotonic_ns(), raw_clock(self.client.ctx)
        time.sleep(0.5)
        t1, c1 = time.monotonic_ns(), raw_clock(self.client.ctx)
        ns = (c1 - c0) * 1000000 / khz
        # Loose bounds: a busy host stretches both, not the ratio much.
        self.assertGreater(ns, (t1 - t0) * 0.5)
        self.assertLess(ns, (t1 - t0) * 2)
