# SPDX-License-Identifier: GPL-2.0-or-later
"""
Requests rnic must refuse, each with the work completion status or errno
a verbs program expects.  A module of rdma-core's pyverbs test package:
rnic-pyverbs copies it in and runs it with --only test_rnic_negative.
"""
import errno
import time

from pyverbs.pyverbs_error import PyverbsRDMAError
from pyverbs.addr import AHAttr, GlobalRoute
from pyverbs.mr import MR, MW, MWBindInfo
from pyverbs.qp import QPAttr, QPCap, QPInitAttr, QP
from pyverbs.wr import SendWR, SGE
from pyverbs.pd import PD
from tests.base import RCResources, RDMATestCase, UDResources
import tests.base as base
import pyverbs.enums as e
import tests.utils as u

REMOTE_ALL = (e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE |
              e.IBV_ACCESS_REMOTE_READ | e.IBV_ACCESS_REMOTE_ATOMIC)


class NegRes(RCResources):
    """RC pair whose MRs have 'mr_access'; 'rnr_retry' for the RTS step."""

    def __init__(self, dev_name, ib_port, gid_index, mr_access=REMOTE_ALL,
                 rnr_retry=base.RNR_RETRY):
        self.mr_access = mr_access
        self.rnr_retry = rnr_retry
        super().__init__(dev_name=dev_name, ib_port=ib_port,
                         gid_index=gid_index)

    def create_mr(self):
        self.mr = MR(self.pd, self.msg_size, self.mr_access)

    def create_qp_attr(self):
        attr = QPAttr(port_num=self.ib_port)
        attr.qp_access_flags = REMOTE_ALL
        return attr

    def to_rts(self):
        attr = self.create_qp_attr()
        attr.path_mtu = base.PATH_MTU
        attr.max_dest_rd_atomic = base.MAX_DEST_RD_ATOMIC
        attr.max_rd_atomic = base.MAX_RD_ATOMIC
        attr.min_rnr_timer = base.MIN_RNR_TIMER
        attr.timeout = base.TIMEOUT
        attr.retry_cnt = base.RETRY_CNT
        attr.rnr_retry = self.rnr_retry
        gr = GlobalRoute(dgid=self.ctx.query_gid(self.ib_port, self.gid_index),
                         sgid_index=self.gid_index)
        attr.ah_attr = AHAttr(port_num=self.ib_port, is_global=1, gr=gr,
                              dlid=self.port_attr.lid)
        for i in range(self.qp_count):
            attr.dest_qp_num = self.rqps_num[i]
            attr.rq_psn = self.psns[i]
            attr.sq_psn = self.rpsns[i]
            self.qps[i].to_rts(attr)


class NegativeTest(RDMATestCase):
    def setUp(self):
        super().setUp()
        self.iters = 1
        self.server = None
        self.client = None

    def refused(self, player, wr, status):
        """Posts 'wr' on player's QP; its completion must carry 'status'."""
        player.qp.post_send(wr)
        with self.assertRaisesRegex(PyverbsRDMAError, status):
            u.poll_cq(player.cq)

    def rdma_wr(self, opcode, rkey, raddr, length):
        sge = SGE(self.client.mr.buf, length, self.client.mr.lkey)
        wr = SendWR(wr_id=1, opcode=opcode, num_sge=1, sg=[sge])
        wr.set_wr_rdma(rkey, raddr)
        return wr

    def bind_type2(self, length, access):
        """Binds a type 2 window over the server MR's first bytes."""
        mw = MW(self.server.pd, e.IBV_MW_TYPE_2)
        wr = SendWR(opcode=e.IBV_WR_BIND_MW)
        wr.set_bind_wr(mw, MWBindInfo(self.server.mr, self.server.mr.buf,
                                      length, access))
        self.server.qp.post_send(wr)
        u.poll_cq(self.server.cq)
        return mw, wr.rkey

    def test_write_without_remote_write(self):
        self.create_players(NegRes, mr_access=e.IBV_ACCESS_LOCAL_WRITE |
                            e.IBV_ACCESS_REMOTE_READ)
        self.refused(self.client,
                     self.rdma_wr(e.IBV_WR_RDMA_WRITE, self.server.mr.rkey,
                                  self.server.mr.buf, 8),
                     'Remote access error')

    def test_read_past_mr_end(self):
        self.create_players(NegRes)
        end = self.server.mr.buf + self.server.msg_size
        self.refused(self.client,
                     self.rdma_wr(e.IBV_WR_RDMA_READ, self.server.mr.rkey,
                                  end - 8, 64),
                     'Remote access error')

    def test_read_past_mw_end(self):
        self.create_players(NegRes, mr_access=REMOTE_ALL |
                            e.IBV_ACCESS_MW_BIND)
        mw, rkey = self.bind_type2(64, e.IBV_ACCESS_REMOTE_READ)
        self.refused(self.client,
                     self.rdma_wr(e.IBV_WR_RDMA_READ, rkey,
                                  self.server.mr.buf + 32, 64),
                     'Remote access error')
        mw.close()

    def test_rkey_after_dereg(self):
        self.create_players(NegRes)
        rkey, addr = self.server.mr.rkey, self.server.mr.buf
        self.server.mr.close()
        self.refused(self.client,
                     self.rdma_wr(e.IBV_WR_RDMA_WRITE, rkey, addr, 8),
                     'Remote access error')

    def test_rkey_after_invalidate(self):
        self.create_players(NegRes, mr_access=REMOTE_ALL |
                            e.IBV_ACCESS_MW_BIND)
        mw, rkey = self.bind_type2(64, e.IBV_ACCESS_REMOTE_WRITE)
        inv = SendWR(opcode=e.IBV_WR_LOCAL_INV)
        inv.imm_data = rkey
        self.server.qp.post_send(inv)
        u.poll_cq(self.server.cq)
        self.refused(self.client,
                     self.rdma_wr(e.IBV_WR_RDMA_WRITE, rkey,
                                  self.server.mr.buf, 8),
                     'Remote access error')
        mw.close()

    def test_mr_of_another_pd(self):
        self.create_players(NegRes)
        with PD(self.server.ctx) as pd2:
            with MR(pd2, self.server.msg_size, REMOTE_ALL) as mr2:
                self.refused(self.client,
                             self.rdma_wr(e.IBV_WR_RDMA_WRITE, mr2.rkey,
                                          mr2.buf, 8),
                             'Remote access error')

    def test_bind_without_mw_bind(self):
        self.create_players(NegRes)
        mw = MW(self.server.pd, e.IBV_MW_TYPE_2)
        wr = SendWR(opcode=e.IBV_WR_BIND_MW)
        wr.set_bind_wr(mw, MWBindInfo(self.server.mr, self.server.mr.buf, 64,
                                      e.IBV_ACCESS_REMOTE_READ))
        self.refused(self.server, wr, '(?i)bind error')
        mw.close()

    def test_atomic_unaligned(self):
        self.create_players(NegRes)
        sge = SGE(self.client.mr.buf, 8, self.client.mr.lkey)
        wr = SendWR(wr_id=2, opcode=e.IBV_WR_ATOMIC_FETCH_AND_ADD, num_sge=1,
                    sg=[sge])
        wr.set_wr_atomic(rkey=self.server.mr.rkey,
                         addr=self.server.mr.buf + 4, compare_add=1, swap=0)
        self.refused(self.client, wr, '(?i)remote invalid')

    def test_rnr_retry_zero(self):
        self.create_players(NegRes, rnr_retry=0)
        sge = SGE(self.client.mr.buf, 8, self.client.mr.lkey)
        wr = SendWR(wr_id=3, opcode=e.IBV_WR_SEND, num_sge=1, sg=[sge])
        self.refused(self.client, wr, '(?i)rnr retry')

    def test_modify_qp_illegal(self):
        self.create_players(NegRes)
        init = QPInitAttr(qp_type=e.IBV_QPT_RC, scq=self.server.cq,
                          rcq=self.server.cq, cap=QPCap(4, 4, 1, 1))
        with QP(self.server.pd, init) as qp:
            # RESET to RTS skips INIT and RTR.
            with self.assertRaises(PyverbsRDMAError) as cm:
                qp.modify(QPAttr(qp_state=e.IBV_QPS_RTS), e.IBV_QP_STATE)
            self.assertEqual(cm.exception.error_code, errno.EINVAL)
            # A port the device does not have.
            attr = QPAttr(qp_state=e.IBV_QPS_INIT, port_num=9)
            attr.qp_access_flags = 0
            attr.pkey_index = 0
            with self.assertRaises(PyverbsRDMAError) as cm:
                qp.modify(attr, e.IBV_QP_STATE | e.IBV_QP_PORT |
                          e.IBV_QP_PKEY_INDEX | e.IBV_QP_ACCESS_FLAGS)
            self.assertEqual(cm.exception.error_code, errno.EINVAL)

    def test_ud_wrong_qkey(self):
        """
        A UD message whose Q_Key is not the receiving QP's is dropped: the
        sender completes (UD has no acknowledgement), the receive stays
        posted, and the next message with the right Q_Key takes it.
        """
        self.create_players(UDResources)
        ah = u.get_global_ah(self.client, self.gid_index, self.ib_port)
        u.post_recv(self.server, u.get_recv_wr(self.server))
        wr, _ = u.get_send_elements(self.client, False)
        wr.set_wr_ud(ah, self.client.rqps_num[0], self.client.UD_QKEY ^ 0x1)
        self.client.qp.post_send(wr)
        u.poll_cq(self.client.cq)
        time.sleep(0.5)
        nc, _ = self.server.cq.poll()
        self.assertEqual(nc, 0, "a message with a wrong Q_Key was received")
        wr.set_wr_ud(ah, self.client.rqps_num[0], self.client.UD_QKEY)
        self.client.qp.post_send(wr)
        u.poll_cq(self.client.cq)
        u.poll_cq(self.server.cq)
