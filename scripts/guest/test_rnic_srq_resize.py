# SPDX-License-Identifier: GPL-2.0-or-later
"""
ibv_modify_srq(IBV_SRQ_MAX_WR) with traffic: receives posted before the
resize are consumed from the grown ring with their data where they say,
and the ring takes more than the old size.  A module of rdma-core's
pyverbs test package: rnic-pyverbs copies it in with --extra.
"""
import unittest

from pyverbs.srq import SrqAttr
from tests.base import RCResources, RDMATestCase
import pyverbs.enums as e
import tests.utils as u


class SmallSrqRC(RCResources):
    """RC pair sharing an SRQ much smaller than the traffic needs."""

    def create_srq_attr(self):
        return SrqAttr(max_wr=16)


class SrqResizeTraffic(RDMATestCase):
    def setUp(self):
        super().setUp()
        self.iters = 10
        self.create_players(SmallSrqRC, qp_count=2, with_srq=True)

    def test_srq_resize_traffic(self):
        dev = self.server.ctx.query_device()
        if not dev.device_cap_flags & e.IBV_DEVICE_SRQ_RESIZE:
            raise unittest.SkipTest('SRQ resize is not supported')
        srq = self.server.srq
        old = srq.query().max_wr
        # Outstanding receives in the old ring, then the ring grows.
        for _ in range(old // 2):
            srq.post_recv(u.get_recv_wr(self.server))
        new = min(dev.max_srq_wr, old * 4)
        srq.modify(SrqAttr(max_wr=new), e.IBV_SRQ_MAX_WR)
        self.assertGreaterEqual(srq.query().max_wr, new)
        # More than the old ring could ever hold.
        for _ in range(old):
            srq.post_recv(u.get_recv_wr(self.server))
        # Each message lands in the oldest receive: one from before.
        u.traffic(**self.traffic_args)
