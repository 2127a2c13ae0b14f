// SPDX-License-Identifier: GPL-2.0
/*
 * rnic command queue.
 *
 * Two layers: the engine below submits one command at a time under a
 * mutex and sleeps until the device marks the response done; the typed
 * wrappers at the end build each command and unpack its answer.  A
 * timeout or a fatal device status marks the queue dead, after which
 * every command fails with -EIO without touching the device.
 */
#include <linux/delay.h>
#include <linux/dma-mapping.h>
#include <linux/jiffies.h>

#include "rnic.h"

/*
 * A command that timed out or a fatal status: the device may still own
 * rings and pages that the callers of the failed commands are about to
 * free.  Reset it first, so that it stops all DMA, then tell the ULPs
 * (IB_EVENT_DEVICE_FATAL); every later command fails at once.
 */
void rnic_cmdq_mark_dead(struct rnic_dev *dev, const char *why)
{
	if (dev->cmdq.dead)
		return;
	dev_err(&dev->pdev->dev,
		"command queue dead (%s), status 0x%x fatal code 0x%x: resetting the device\n",
		why, rnic_rd32(dev, RNIC_REG_STATUS),
		rnic_rd32(dev, RNIC_REG_FATAL_CODE));
	WRITE_ONCE(dev->cmdq.dead, true);
	rnic_wr32(dev, RNIC_REG_CTRL, RNIC_CTRL_RESET);
	/* The reset is synchronous; the read flushes the posted write. */
	rnic_rd32(dev, RNIC_REG_STATUS);
	schedule_work(&dev->fatal_work);
}

bool rnic_dev_dead(struct rnic_dev *dev)
{
	return READ_ONCE(dev->cmdq.dead);
}

int rnic_cmdq_init(struct rnic_dev *dev)
{
	struct rnic_cmdq *q = &dev->cmdq;
	size_t bytes = (size_t)RNIC_CMD_ENTRY_SIZE << RNIC_CMDQ_LOG_SIZE;
	unsigned long timeout;

	mutex_init(&q->lock);
	q->log_size = RNIC_CMDQ_LOG_SIZE;
	q->ring = dma_alloc_coherent(&dev->pdev->dev, bytes, &q->ring_dma,
				     GFP_KERNEL);
	if (!q->ring)
		return -ENOMEM;
	q->out = dma_alloc_coherent(&dev->pdev->dev, PAGE_SIZE, &q->out_dma,
				    GFP_KERNEL);
	if (!q->out) {
		dma_free_coherent(&dev->pdev->dev, bytes, q->ring, q->ring_dma);
		q->ring = NULL;
		return -ENOMEM;
	}
	q->pi = 0;
	q->dead = false;

	rnic_wr32(dev, RNIC_REG_CMDQ_BASE_LO, lower_32_bits(q->ring_dma));
	rnic_wr32(dev, RNIC_REG_CMDQ_BASE_HI, upper_32_bits(q->ring_dma));
	rnic_wr32(dev, RNIC_REG_CMDQ_LOG_SIZE, q->log_size);
	rnic_wr32(dev, RNIC_REG_CTRL, RNIC_CTRL_ENABLE);

	timeout = jiffies + msecs_to_jiffies(RNIC_CMD_TIMEOUT_MS);
	for (;;) {
		u32 st = rnic_rd32(dev, RNIC_REG_STATUS);

		if (st & RNIC_STATUS_FATAL)
			break;
		if (st & RNIC_STATUS_READY)
			return 0;
		if (time_after(jiffies, timeout))
			break;
		usleep_range(100, 1000);
	}
	dev_err(&dev->pdev->dev, "device did not become ready (status 0x%x)\n",
		rnic_rd32(dev, RNIC_REG_STATUS));
	rnic_cmdq_destroy(dev);
	return -EIO;
}

void rnic_cmdq_destroy(struct rnic_dev *dev)
{
	struct rnic_cmdq *q = &dev->cmdq;
	size_t bytes = (size_t)RNIC_CMD_ENTRY_SIZE << q->log_size;

	if (q->out)
		dma_free_coherent(&dev->pdev->dev, PAGE_SIZE, q->out,
				  q->out_dma);
	if (q->ring)
		dma_free_coherent(&dev->pdev->dev, bytes, q->ring,
				  q->ring_dma);
	q->out = NULL;
	q->ring = NULL;
}

static int rnic_cmd_status_to_errno(u8 status)
{
	switch (status) {
	case RNIC_CMD_OK:
		return 0;
	case RNIC_CMD_ERR_OPCODE:
	case RNIC_CMD_ERR_NOT_SUPP:
		return -EOPNOTSUPP;
	case RNIC_CMD_ERR_STATE:
	case RNIC_CMD_ERR_PARAM:
		return -EINVAL;
	case RNIC_CMD_ERR_HANDLE:
		return -ENOENT;
	case RNIC_CMD_ERR_RESOURCE:
		return -ENOMEM;
	case RNIC_CMD_ERR_BUSY:
		return -EBUSY;
	case RNIC_CMD_ERR_DMA:
		return -EFAULT;
	case RNIC_CMD_ERR_ACCESS:
		return -EACCES;
	default:
		return -EIO;
	}
}

/*
 * Submit @cmd (header opcode and uctx set by the caller) and wait for
 * its response, copied to @resp.  Called with q->lock held.
 */
static int rnic_cmd_exec_locked(struct rnic_dev *dev, struct rnic_cmd *cmd,
				struct rnic_cmd_resp *resp)
{
	struct rnic_cmdq *q = &dev->cmdq;
	struct rnic_cmd *slot;
	unsigned long timeout;
	unsigned int spins = 0;
	u32 cookie;
	int err;

	if (q->dead)
		return -EIO;

	cookie = ++q->cookie;
	cmd->hdr.cookie = cpu_to_le32(cookie);
	cmd->hdr.flags = 0;
	memset(&cmd->resp, 0, sizeof(cmd->resp));

	slot = &q->ring[q->pi & ((1u << q->log_size) - 1)];
	memcpy(slot, cmd, sizeof(*slot));
	q->pi++;
	/* The entry must be in memory before the device sees the new PI. */
	dma_wmb();
	rnic_wr32(dev, RNIC_REG_CMDQ_PI, q->pi);

	timeout = jiffies + msecs_to_jiffies(RNIC_CMD_TIMEOUT_MS);
	while (!READ_ONCE(slot->resp.done)) {
		/* A fatal event from the EQ reset the device under us. */
		if (READ_ONCE(q->dead))
			return -EIO;
		if (time_after(jiffies, timeout)) {
			rnic_cmdq_mark_dead(dev, "timeout");
			return -EIO;
		}
		if (rnic_rd32(dev, RNIC_REG_STATUS) & RNIC_STATUS_FATAL) {
			rnic_cmdq_mark_dead(dev, "fatal status");
			return -EIO;
		}
		if (spins++ < 100)
			usleep_range(10, 50);
		else
			usleep_range(500, 2000);
	}
	/* Read the response body only after 'done'. */
	dma_rmb();
	memcpy(resp, &slot->resp, sizeof(*resp));

	if (le32_to_cpu(resp->cookie) != cookie) {
		rnic_cmdq_mark_dead(dev, "cookie mismatch");
		return -EIO;
	}
	err = rnic_cmd_status_to_errno(resp->status);
	if (err)
		dev_dbg(&dev->pdev->dev, "command 0x%x failed: status %u\n",
			cmd->hdr.opcode, resp->status);
	return err;
}

static int rnic_cmd_exec(struct rnic_dev *dev, struct rnic_cmd *cmd,
			 struct rnic_cmd_resp *resp)
{
	int err;

	mutex_lock(&dev->cmdq.lock);
	err = rnic_cmd_exec_locked(dev, cmd, resp);
	mutex_unlock(&dev->cmdq.lock);
	return err;
}

static void rnic_cmd_init(struct rnic_cmd *cmd, u8 opcode, u16 uctx)
{
	memset(cmd, 0, sizeof(*cmd));
	cmd->hdr.opcode = opcode;
	cmd->hdr.uctx = cpu_to_le16(uctx);
}

/* A command that takes or returns nothing but one handle. */
static int rnic_cmd_handle_op(struct rnic_dev *dev, u8 opcode, u16 uctx,
			      u32 handle)
{
	struct rnic_cmd_resp resp;
	struct rnic_cmd cmd;

	rnic_cmd_init(&cmd, opcode, uctx);
	cmd.u.handle.handle = cpu_to_le32(handle);
	return rnic_cmd_exec(dev, &cmd, &resp);
}

/* QUERY_*: the answer goes to the shared DMA buffer, copied under lock. */
static int rnic_cmd_query(struct rnic_dev *dev, u8 opcode, u16 uctx,
			  u32 handle, void *out, size_t len)
{
	struct rnic_cmdq *q = &dev->cmdq;
	struct rnic_cmd_resp resp;
	struct rnic_cmd cmd;
	int err;

	rnic_cmd_init(&cmd, opcode, uctx);
	cmd.u.query.out_addr = cpu_to_le64(q->out_dma);
	cmd.u.query.out_len = cpu_to_le32(PAGE_SIZE);
	cmd.u.query.handle = cpu_to_le32(handle);

	mutex_lock(&q->lock);
	memset(q->out, 0, len);
	err = rnic_cmd_exec_locked(dev, &cmd, &resp);
	if (!err)
		memcpy(out, q->out, len);
	mutex_unlock(&q->lock);
	return err;
}

int rnic_cmd_query_device(struct rnic_dev *dev, struct rnic_device_attr *attr)
{
	return rnic_cmd_query(dev, RNIC_CMD_QUERY_DEVICE, 0, 0, attr,
			      sizeof(*attr));
}

int rnic_cmd_query_port(struct rnic_dev *dev, u32 port,
			struct rnic_port_attr *attr)
{
	return rnic_cmd_query(dev, RNIC_CMD_QUERY_PORT, 0, port, attr,
			      sizeof(*attr));
}

/*
 * MAD_IFC: the MAD and its answer share the query buffer, the MAD in the
 * first half and the answer in the second, under the queue's lock.
 */
int rnic_cmd_mad_ifc(struct rnic_dev *dev, u8 flags, u16 slid,
		     const void *in, void *out, bool *reply)
{
	struct rnic_cmdq *q = &dev->cmdq;
	struct rnic_cmd_resp resp;
	struct rnic_cmd cmd;
	int err;

	BUILD_BUG_ON(2 * RNIC_MAD_SIZE > PAGE_SIZE);
	rnic_cmd_init(&cmd, RNIC_CMD_MAD_IFC, 0);
	cmd.u.mad_ifc.in_addr = cpu_to_le64(q->out_dma);
	cmd.u.mad_ifc.out_addr = cpu_to_le64(q->out_dma + RNIC_MAD_SIZE);
	cmd.u.mad_ifc.port = RNIC_PORT;
	cmd.u.mad_ifc.flags = flags;
	cmd.u.mad_ifc.slid = cpu_to_le16(slid);

	mutex_lock(&q->lock);
	/* RNIC_MAD_IFC_TRAP has no MAD in. */
	if (in)
		memcpy(q->out, in, RNIC_MAD_SIZE);
	else
		memset(q->out, 0, RNIC_MAD_SIZE);
	memset(q->out + RNIC_MAD_SIZE, 0, RNIC_MAD_SIZE);
	err = rnic_cmd_exec_locked(dev, &cmd, &resp);
	if (!err) {
		*reply = le32_to_cpu(resp.out[RNIC_OUT_MAD_REPLY]) != 0;
		memcpy(out, q->out + RNIC_MAD_SIZE, RNIC_MAD_SIZE);
	}
	mutex_unlock(&q->lock);
	return err;
}

int rnic_cmd_query_qp(struct rnic_dev *dev, u16 uctx, u32 qpn,
		      struct rnic_qp_attr *out)
{
	return rnic_cmd_query(dev, RNIC_CMD_QUERY_QP, uctx, qpn, out,
			      sizeof(*out));
}

int rnic_cmd_set_gid(struct rnic_dev *dev, u32 index, u8 type, const u8 *gid,
		     const u8 *mac, u16 vlan_id)
{
	struct rnic_cmd_resp resp;
	struct rnic_cmd cmd;

	rnic_cmd_init(&cmd, RNIC_CMD_SET_GID, 0);
	cmd.u.gid.index = cpu_to_le32(index);
	cmd.u.gid.type = type;
	memcpy(cmd.u.gid.gid, gid, sizeof(cmd.u.gid.gid));
	memcpy(cmd.u.gid.mac, mac, sizeof(cmd.u.gid.mac));
	cmd.u.gid.vlan_id = cpu_to_le16(vlan_id);
	return rnic_cmd_exec(dev, &cmd, &resp);
}

int rnic_cmd_del_gid(struct rnic_dev *dev, u32 index)
{
	struct rnic_cmd_resp resp;
	struct rnic_cmd cmd;

	rnic_cmd_init(&cmd, RNIC_CMD_DEL_GID, 0);
	cmd.u.gid.index = cpu_to_le32(index);
	return rnic_cmd_exec(dev, &cmd, &resp);
}

int rnic_cmd_alloc_uctx(struct rnic_dev *dev, u32 *uctx)
{
	struct rnic_cmd_resp resp;
	struct rnic_cmd cmd;
	int err;

	rnic_cmd_init(&cmd, RNIC_CMD_ALLOC_UCTX, 0);
	err = rnic_cmd_exec(dev, &cmd, &resp);
	if (!err)
		*uctx = le32_to_cpu(resp.out[RNIC_OUT_HANDLE]);
	return err;
}

int rnic_cmd_dealloc_uctx(struct rnic_dev *dev, u32 uctx)
{
	return rnic_cmd_handle_op(dev, RNIC_CMD_DEALLOC_UCTX, 0, uctx);
}

int rnic_cmd_create_eq(struct rnic_dev *dev, u32 eqn, u32 log_size,
		       u16 vector, const struct rnic_pbl *ring)
{
	struct rnic_cmd_resp resp;
	struct rnic_cmd cmd;

	rnic_cmd_init(&cmd, RNIC_CMD_CREATE_EQ, 0);
	cmd.u.eq.eqn = cpu_to_le32(eqn);
	cmd.u.eq.log_size = log_size;
	cmd.u.eq.vector = cpu_to_le16(vector);
	cmd.u.eq.ring = *ring;
	return rnic_cmd_exec(dev, &cmd, &resp);
}

int rnic_cmd_destroy_eq(struct rnic_dev *dev, u32 eqn)
{
	return rnic_cmd_handle_op(dev, RNIC_CMD_DESTROY_EQ, 0, eqn);
}

int rnic_cmd_create_pd(struct rnic_dev *dev, u16 uctx, u32 *pdn)
{
	struct rnic_cmd_resp resp;
	struct rnic_cmd cmd;
	int err;

	rnic_cmd_init(&cmd, RNIC_CMD_CREATE_PD, uctx);
	err = rnic_cmd_exec(dev, &cmd, &resp);
	if (!err)
		*pdn = le32_to_cpu(resp.out[RNIC_OUT_HANDLE]);
	return err;
}

int rnic_cmd_destroy_pd(struct rnic_dev *dev, u16 uctx, u32 pdn)
{
	return rnic_cmd_handle_op(dev, RNIC_CMD_DESTROY_PD, uctx, pdn);
}

int rnic_cmd_create_cq(struct rnic_dev *dev, u16 uctx,
		       const struct rnic_cmd_create_cq *in, u32 *cqn,
		       u32 *entries)
{
	struct rnic_cmd_resp resp;
	struct rnic_cmd cmd;
	int err;

	rnic_cmd_init(&cmd, RNIC_CMD_CREATE_CQ, uctx);
	cmd.u.create_cq = *in;
	err = rnic_cmd_exec(dev, &cmd, &resp);
	if (!err) {
		*cqn = le32_to_cpu(resp.out[RNIC_OUT_HANDLE]);
		*entries = le32_to_cpu(resp.out[RNIC_OUT_ENTRIES]);
	}
	return err;
}

int rnic_cmd_resize_cq(struct rnic_dev *dev, u16 uctx,
		       const struct rnic_cmd_resize_cq *in, u32 *entries,
		       u32 *moved)
{
	struct rnic_cmd_resp resp;
	struct rnic_cmd cmd;
	int err;

	rnic_cmd_init(&cmd, RNIC_CMD_RESIZE_CQ, uctx);
	cmd.u.resize_cq = *in;
	err = rnic_cmd_exec(dev, &cmd, &resp);
	if (!err) {
		*entries = le32_to_cpu(resp.out[RNIC_OUT_ENTRIES]);
		*moved = le32_to_cpu(resp.out[RNIC_OUT_MOVED]);
	}
	return err;
}

int rnic_cmd_alloc_mw(struct rnic_dev *dev, u16 uctx, u32 pdn, u8 type,
		      u32 *rkey)
{
	struct rnic_cmd_resp resp;
	struct rnic_cmd cmd;
	int err;

	rnic_cmd_init(&cmd, RNIC_CMD_ALLOC_MW, uctx);
	cmd.u.alloc_mw.pdn = cpu_to_le32(pdn);
	cmd.u.alloc_mw.type = type;
	err = rnic_cmd_exec(dev, &cmd, &resp);
	if (!err)
		*rkey = le32_to_cpu(resp.out[RNIC_OUT_HANDLE]);
	return err;
}

int rnic_cmd_dealloc_mw(struct rnic_dev *dev, u16 uctx, u32 rkey)
{
	return rnic_cmd_handle_op(dev, RNIC_CMD_DEALLOC_MW, uctx, rkey);
}

int rnic_cmd_mcast(struct rnic_dev *dev, u16 uctx, bool attach, u32 qpn,
		   const u8 *gid)
{
	struct rnic_cmd_resp resp;
	struct rnic_cmd cmd;

	rnic_cmd_init(&cmd, attach ? RNIC_CMD_ATTACH_MCAST :
				     RNIC_CMD_DETACH_MCAST, uctx);
	cmd.u.mcast.qpn = cpu_to_le32(qpn);
	memcpy(cmd.u.mcast.gid, gid, sizeof(cmd.u.mcast.gid));
	return rnic_cmd_exec(dev, &cmd, &resp);
}

int rnic_cmd_create_flow(struct rnic_dev *dev, u16 uctx,
			 const struct rnic_cmd_create_flow *in, u32 *handle)
{
	struct rnic_cmd_resp resp;
	struct rnic_cmd cmd;
	int err;

	rnic_cmd_init(&cmd, RNIC_CMD_CREATE_FLOW, uctx);
	cmd.u.create_flow = *in;
	err = rnic_cmd_exec(dev, &cmd, &resp);
	if (!err)
		*handle = le32_to_cpu(resp.out[RNIC_OUT_HANDLE]);
	return err;
}

int rnic_cmd_destroy_flow(struct rnic_dev *dev, u16 uctx, u32 handle)
{
	return rnic_cmd_handle_op(dev, RNIC_CMD_DESTROY_FLOW, uctx, handle);
}

int rnic_cmd_set_rss(struct rnic_dev *dev, u16 uctx,
		     const struct rnic_cmd_set_rss *in)
{
	struct rnic_cmd_resp resp;
	struct rnic_cmd cmd;

	rnic_cmd_init(&cmd, RNIC_CMD_SET_RSS, uctx);
	cmd.u.set_rss = *in;
	return rnic_cmd_exec(dev, &cmd, &resp);
}

int rnic_cmd_destroy_cq(struct rnic_dev *dev, u16 uctx, u32 cqn)
{
	return rnic_cmd_handle_op(dev, RNIC_CMD_DESTROY_CQ, uctx, cqn);
}

int rnic_cmd_create_qp(struct rnic_dev *dev, u16 uctx,
		       const struct rnic_cmd_create_qp *in, u32 *qpn)
{
	struct rnic_cmd_resp resp;
	struct rnic_cmd cmd;
	int err;

	rnic_cmd_init(&cmd, RNIC_CMD_CREATE_QP, uctx);
	cmd.u.create_qp = *in;
	err = rnic_cmd_exec(dev, &cmd, &resp);
	if (!err)
		*qpn = le32_to_cpu(resp.out[RNIC_OUT_HANDLE]);
	return err;
}

int rnic_cmd_destroy_qp(struct rnic_dev *dev, u16 uctx, u32 qpn)
{
	return rnic_cmd_handle_op(dev, RNIC_CMD_DESTROY_QP, uctx, qpn);
}

int rnic_cmd_modify_qp(struct rnic_dev *dev, u16 uctx,
		       const struct rnic_cmd_modify_qp *in)
{
	struct rnic_cmd_resp resp;
	struct rnic_cmd cmd;

	rnic_cmd_init(&cmd, RNIC_CMD_MODIFY_QP, uctx);
	cmd.u.modify_qp = *in;
	return rnic_cmd_exec(dev, &cmd, &resp);
}

int rnic_cmd_reg_mr(struct rnic_dev *dev, u16 uctx,
		    const struct rnic_cmd_reg_mr *in, u32 *lkey, u32 *rkey)
{
	struct rnic_cmd_resp resp;
	struct rnic_cmd cmd;
	int err;

	rnic_cmd_init(&cmd, RNIC_CMD_REG_MR, uctx);
	cmd.u.reg_mr = *in;
	err = rnic_cmd_exec(dev, &cmd, &resp);
	if (!err) {
		*lkey = le32_to_cpu(resp.out[RNIC_OUT_LKEY]);
		*rkey = le32_to_cpu(resp.out[RNIC_OUT_RKEY]);
	}
	return err;
}

int rnic_cmd_rereg_mr(struct rnic_dev *dev, u16 uctx, u32 lkey,
		      const struct rnic_cmd_reg_mr *in)
{
	struct rnic_cmd_resp resp;
	struct rnic_cmd cmd;

	rnic_cmd_init(&cmd, RNIC_CMD_REREG_MR, uctx);
	cmd.u.rereg_mr.reg = *in;
	cmd.u.rereg_mr.key = cpu_to_le32(lkey);
	return rnic_cmd_exec(dev, &cmd, &resp);
}

int rnic_cmd_dereg_mr(struct rnic_dev *dev, u16 uctx, u32 lkey)
{
	return rnic_cmd_handle_op(dev, RNIC_CMD_DEREG_MR, uctx, lkey);
}

int rnic_cmd_create_srq(struct rnic_dev *dev, u16 uctx,
			const struct rnic_cmd_create_srq *in, u32 *srqn)
{
	struct rnic_cmd_resp resp;
	struct rnic_cmd cmd;
	int err;

	rnic_cmd_init(&cmd, RNIC_CMD_CREATE_SRQ, uctx);
	cmd.u.create_srq = *in;
	err = rnic_cmd_exec(dev, &cmd, &resp);
	if (!err)
		*srqn = le32_to_cpu(resp.out[RNIC_OUT_HANDLE]);
	return err;
}

int rnic_cmd_destroy_srq(struct rnic_dev *dev, u16 uctx, u32 srqn)
{
	return rnic_cmd_handle_op(dev, RNIC_CMD_DESTROY_SRQ, uctx, srqn);
}

int rnic_cmd_modify_srq(struct rnic_dev *dev, u16 uctx, u32 srqn, u32 limit)
{
	struct rnic_cmd_resp resp;
	struct rnic_cmd cmd;

	rnic_cmd_init(&cmd, RNIC_CMD_MODIFY_SRQ, uctx);
	cmd.u.modify_srq.srqn = cpu_to_le32(srqn);
	cmd.u.modify_srq.limit = cpu_to_le32(limit);
	return rnic_cmd_exec(dev, &cmd, &resp);
}

int rnic_cmd_resize_srq(struct rnic_dev *dev, u16 uctx,
			const struct rnic_cmd_resize_srq *in)
{
	struct rnic_cmd_resp resp;
	struct rnic_cmd cmd;

	rnic_cmd_init(&cmd, RNIC_CMD_RESIZE_SRQ, uctx);
	cmd.u.resize_srq = *in;
	return rnic_cmd_exec(dev, &cmd, &resp);
}
