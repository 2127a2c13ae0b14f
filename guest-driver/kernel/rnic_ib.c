// SPDX-License-Identifier: GPL-2.0
/*
 * rnic: the InfiniBand port (link-layer=infiniband)
 *
 * On an IB port the device's subnet management agent holds the port's
 * state, as HCA firmware does: the LID, the SM, the P_Key table and the
 * GID prefix are what the subnet manager set with PortInfo and
 * P_KeyTable SMPs.  The driver reads them with MAD_IFC, as mlx4 reads
 * its firmware's, passes the SMPs and PerfMgt MADs the MAD layer
 * receives to the same agents (all but SMInfo, which belongs to the SM),
 * and turns the port events the device
 * posts into ib_events.  What the host owns, the node description and
 * the capability bits its software sets, it gives the SMA with LOCAL
 * Sets; the traps the SMA makes for the SM it sends from QP0.
 */

#include <rdma/ib_mad.h>
#include <rdma/ib_smi.h>
#include "rnic.h"
#include "rnic_cmdq.h"

/* PortInfo (IBA 14.2.5.6): byte offsets of what the driver reads. */
#define RNIC_PI_GID_PREFIX	8
#define RNIC_PI_MKEY_VIOL	44
#define RNIC_PI_PKEY_VIOL	46
#define RNIC_PI_QKEY_VIOL	48
#define RNIC_PI_SUBNET_TIMEOUT	51	/* low 5 bits */
#define RNIC_PI_INIT_TYPE_REPLY	41	/* high 4 bits */

#define RNIC_PI_CAP_MASK	20

#define RNIC_IB_PKEYS		32	/* one P_KeyTable block */

/* dev->ib_events: beside the ib_event_type bits, traps to send. */
#define RNIC_IB_TRAP_PENDING	(BITS_PER_LONG - 1)

static u16 rnic_be16_at(const u8 *p)
{
	return p[0] << 8 | p[1];
}

/*
 * One SMP of the driver's own to the local SMA: a SubnGet without M_Key
 * checks (its queries, as mlx4's are), or a LOCAL SubnSet of what the
 * host owns.  @data is the attribute in, and the answer's out.
 */
static int rnic_ib_smp(struct rnic_dev *dev, u8 method, __be16 attr_id,
		       u32 attr_mod, u8 data[IB_SMP_DATA_SIZE])
{
	u8 flags = method == IB_MGMT_METHOD_SET ? RNIC_MAD_IFC_LOCAL :
		   RNIC_MAD_IFC_QP0 | RNIC_MAD_IFC_IGNORE_MKEY;
	struct ib_smp *in, *out;
	bool reply = false;
	int err;

	in = kzalloc(sizeof(*in), GFP_KERNEL);
	out = kzalloc(sizeof(*out), GFP_KERNEL);
	if (!in || !out) {
		err = -ENOMEM;
		goto out;
	}
	in->base_version = IB_MGMT_BASE_VERSION;
	in->mgmt_class = IB_MGMT_CLASS_SUBN_LID_ROUTED;
	in->class_version = 1;
	in->method = method;
	in->attr_id = attr_id;		/* IB_SMP_ATTR_* are big-endian */
	in->attr_mod = cpu_to_be32(attr_mod);
	memcpy(in->data, data, IB_SMP_DATA_SIZE);
	err = rnic_cmd_mad_ifc(dev, flags, 0, in, out, &reply);
	/* A refused Set is the host's bad value; a failed Get, the device's. */
	if (!err && (!reply || out->status))
		err = method == IB_MGMT_METHOD_SET ? -EINVAL : -EIO;
	if (!err)
		memcpy(data, out->data, IB_SMP_DATA_SIZE);
out:
	kfree(in);
	kfree(out);
	return err;
}

static int rnic_ib_get(struct rnic_dev *dev, __be16 attr_id, u32 attr_mod,
		       u8 data[IB_SMP_DATA_SIZE])
{
	memset(data, 0, IB_SMP_DATA_SIZE);
	return rnic_ib_smp(dev, IB_MGMT_METHOD_GET, attr_id, attr_mod, data);
}

static int rnic_ib_push_node_desc(struct rnic_dev *dev)
{
	u8 d[IB_SMP_DATA_SIZE] = {};

	BUILD_BUG_ON(IB_DEVICE_NODE_DESC_MAX != IB_SMP_DATA_SIZE);
	memcpy(d, dev->ibdev.node_desc, IB_DEVICE_NODE_DESC_MAX);
	return rnic_ib_smp(dev, IB_MGMT_METHOD_SET, IB_SMP_ATTR_NODE_DESC, 0, d);
}

/* The capability bits the stack set that the SM reads in PortInfo. */
static int rnic_ib_push_cap_mask(struct rnic_dev *dev, u32 cap)
{
	u8 d[IB_SMP_DATA_SIZE] = {};
	__be32 v = cpu_to_be32(cap & RNIC_SMA_CAP_HOST);

	memcpy(d + RNIC_PI_CAP_MASK, &v, sizeof(v));
	return rnic_ib_smp(dev, IB_MGMT_METHOD_SET, IB_SMP_ATTR_PORT_INFO,
			   RNIC_PORT, d);
}

int rnic_ib_query_port(struct rnic_dev *dev, struct ib_port_attr *a)
{
	u8 pi[IB_SMP_DATA_SIZE];
	struct rnic_port_attr p;
	int err;

	err = rnic_cmd_query_port(dev, RNIC_PORT, &p);
	if (err)
		return err;
	err = rnic_ib_get(dev, IB_SMP_ATTR_PORT_INFO, RNIC_PORT, pi);
	if (err)
		return err;
	/* enum rnic_port_state has IBA's numbers, as ib_port_state does. */
	a->state = p.state >= IB_PORT_DOWN && p.state <= IB_PORT_ACTIVE ?
		   (enum ib_port_state)p.state : IB_PORT_DOWN;
	a->phys_state = p.phys_state == RNIC_PHYS_LINK_UP ?
			IB_PORT_PHYS_STATE_LINK_UP :
			IB_PORT_PHYS_STATE_POLLING;
	a->lid = le16_to_cpu(p.lid);
	a->sm_lid = le16_to_cpu(p.sm_lid);
	a->lmc = p.lmc & 7;
	a->sm_sl = p.sm_sl & 0xf;
	a->port_cap_flags = le32_to_cpu(p.port_cap_flags) | dev->ib_cap_set;
	a->gid_tbl_len = 1;
	a->pkey_tbl_len = RNIC_IB_PKEYS;
	a->max_mtu = IB_MTU_4096;
	a->active_mtu = p.active_mtu >= IB_MTU_256 &&
			p.active_mtu <= IB_MTU_4096 ?
			(enum ib_mtu)p.active_mtu : IB_MTU_4096;
	a->max_msg_sz = le32_to_cpu(p.max_msg_sz);
	a->max_vl_num = 3;		/* VL0..VL3, as the SMA reports */
	a->active_speed = IB_SPEED_QDR;
	a->active_width = IB_WIDTH_4X;
	a->bad_pkey_cntr = rnic_be16_at(pi + RNIC_PI_PKEY_VIOL);
	a->qkey_viol_cntr = rnic_be16_at(pi + RNIC_PI_QKEY_VIOL);
	a->subnet_timeout = pi[RNIC_PI_SUBNET_TIMEOUT] & 0x1f;
	a->init_type_reply = pi[RNIC_PI_INIT_TYPE_REPLY] >> 4;
	a->ip_gids = false;
	return 0;
}

/* The port's one GID: the SM's subnet prefix and the port GUID. */
int rnic_ib_query_gid(struct rnic_dev *dev, int index, union ib_gid *gid)
{
	u8 pi[IB_SMP_DATA_SIZE];
	struct rnic_port_attr p;
	int err;

	if (index != 0)
		return -EINVAL;
	err = rnic_ib_get(dev, IB_SMP_ATTR_PORT_INFO, RNIC_PORT, pi);
	if (!err)
		err = rnic_cmd_query_port(dev, RNIC_PORT, &p);
	if (err)
		return err;
	memcpy(gid->raw, pi + RNIC_PI_GID_PREFIX, 8);
	gid->global.interface_id = cpu_to_be64(le64_to_cpu(p.port_guid));
	return 0;
}

int rnic_ib_query_pkey(struct rnic_dev *dev, u16 index, u16 *pkey)
{
	u8 tbl[IB_SMP_DATA_SIZE];
	int err;

	if (index >= RNIC_IB_PKEYS)
		return -EINVAL;
	err = rnic_ib_get(dev, IB_SMP_ATTR_PKEY_TABLE, 0, tbl);
	if (err)
		return err;
	*pkey = rnic_be16_at(tbl + 2 * index);
	return 0;
}

/*
 * The capability bits the stack sets on the port, IsSM when opensm
 * opens the issm device above all, kept by the driver and reported with
 * the SMA's own.
 */
static int rnic_ib_modify_port(struct ib_device *ibdev, u32 port, int mask,
			       struct ib_port_modify *props)
{
	struct rnic_dev *dev = to_rdev(ibdev);
	u32 cap;
	int err;

	if (mask & (IB_PORT_SHUTDOWN | IB_PORT_INIT_TYPE))
		return -EOPNOTSUPP;
	mutex_lock(&dev->link_lock);
	cap = (dev->ib_cap_set | props->set_port_cap_mask) &
	      ~props->clr_port_cap_mask;
	/* The SMA reports them, and traps the change (144) to the SM. */
	err = rnic_ib_push_cap_mask(dev, cap);
	if (!err)
		dev->ib_cap_set = cap;
	mutex_unlock(&dev->link_lock);
	return err;
}

/*
 * Writing /sys/class/infiniband/<dev>/node_desc: the SMA answers the
 * fabric's NodeDescription with it, and tells the SM (trap 144), whose
 * records then show it.
 */
static int rnic_ib_modify_device(struct ib_device *ibdev, int mask,
				 struct ib_device_modify *props)
{
	struct rnic_dev *dev = to_rdev(ibdev);
	char old[IB_DEVICE_NODE_DESC_MAX];
	int err;

	if (mask & ~IB_DEVICE_MODIFY_NODE_DESC)
		return -EOPNOTSUPP;
	if (!(mask & IB_DEVICE_MODIFY_NODE_DESC))
		return 0;
	mutex_lock(&dev->link_lock);
	memcpy(old, ibdev->node_desc, sizeof(old));
	memcpy(ibdev->node_desc, props->node_desc, IB_DEVICE_NODE_DESC_MAX);
	err = rnic_ib_push_node_desc(dev);
	if (err)
		memcpy(ibdev->node_desc, old, sizeof(old));
	mutex_unlock(&dev->link_lock);
	return err;
}

/*
 * The MAD layer hands every MAD it receives here first, and the SMPs a
 * local SM sends to its own port.  The SMA answers SubnGet/SubnSet (and
 * takes TrapRepress), the PMA PerfMgt Get/Set; everything else, the SM's
 * own responses included, goes on to the MAD agents.
 */
static int rnic_ib_process_mad(struct ib_device *ibdev, int mad_flags,
			       u32 port, const struct ib_wc *in_wc,
			       const struct ib_grh *in_grh,
			       const struct ib_mad *in, struct ib_mad *out,
			       size_t *out_mad_size, u16 *out_mad_pkey_index)
{
	struct rnic_dev *dev = to_rdev(ibdev);
	u8 method = in->mad_hdr.method;
	u8 cls = in->mad_hdr.mgmt_class;
	u16 slid = in_wc ? ib_lid_cpu16(in_wc->slid) : 0xffff;
	bool reply = false;
	u8 flags = 0;

	if (cls == IB_MGMT_CLASS_SUBN_LID_ROUTED ||
	    cls == IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE) {
		if (method != IB_MGMT_METHOD_GET &&
		    method != IB_MGMT_METHOD_SET &&
		    method != IB_MGMT_METHOD_TRAP_REPRESS)
			return IB_MAD_RESULT_SUCCESS;
		/* SMInfo is the SM's to answer, not the SMA's. */
		if (in->mad_hdr.attr_id == IB_SMP_ATTR_SM_INFO)
			return IB_MAD_RESULT_SUCCESS;
		flags |= RNIC_MAD_IFC_QP0;
		if (mad_flags & IB_MAD_IGNORE_MKEY)
			flags |= RNIC_MAD_IFC_IGNORE_MKEY;
	} else if (cls == IB_MGMT_CLASS_PERF_MGMT) {
		if (method != IB_MGMT_METHOD_GET && method != IB_MGMT_METHOD_SET)
			return IB_MAD_RESULT_SUCCESS;
	} else {
		return IB_MAD_RESULT_SUCCESS;
	}
	if (rnic_cmd_mad_ifc(dev, flags, slid, in, out, &reply))
		return IB_MAD_RESULT_FAILURE;
	if (!reply || method == IB_MGMT_METHOD_TRAP_REPRESS)
		return IB_MAD_RESULT_SUCCESS | IB_MAD_RESULT_CONSUMED;
	return IB_MAD_RESULT_SUCCESS | IB_MAD_RESULT_REPLY;
}

static const struct ib_device_ops rnic_ib_ops = {
	.modify_device = rnic_ib_modify_device,
	.modify_port = rnic_ib_modify_port,
	.process_mad = rnic_ib_process_mad,
};

void rnic_ib_set_ops(struct rnic_dev *dev)
{
	ib_set_device_ops(&dev->ibdev, &rnic_ib_ops);
}

/*
 * An IB port's events come from the SMA (EQ handler, any context) and
 * are dispatched here, from the link work: ib_dispatch_event() sleeps.
 */
void rnic_ib_port_event(struct rnic_dev *dev, u8 eqe_type)
{
	unsigned int bit;

	switch (eqe_type) {
	case RNIC_EQE_PORT_ACTIVE:
		bit = IB_EVENT_PORT_ACTIVE;
		break;
	case RNIC_EQE_PORT_DOWN:
		bit = IB_EVENT_PORT_ERR;
		break;
	case RNIC_EQE_LID_CHANGE:
		bit = IB_EVENT_LID_CHANGE;
		break;
	case RNIC_EQE_PKEY_CHANGE:
		bit = IB_EVENT_PKEY_CHANGE;
		break;
	case RNIC_EQE_SM_CHANGE:
		bit = IB_EVENT_SM_CHANGE;
		break;
	case RNIC_EQE_SMA_TRAP:
		bit = RNIC_IB_TRAP_PENDING;
		break;
	default:
		return;
	}
	set_bit(bit, &dev->ib_events);
	schedule_work(&dev->link_work);
}

static void rnic_ib_trap_sent(struct ib_mad_agent *agent,
			      struct ib_mad_send_wc *wc)
{
	rdma_destroy_ah(wc->send_buf->ah, RDMA_DESTROY_AH_SLEEPABLE);
	ib_free_send_mad(wc->send_buf);
}

/* One SubnTrap from QP0 to the SM's LID, at its SL; sent once. */
static void rnic_ib_send_trap(struct rnic_dev *dev, const struct ib_mad *mad,
			      u16 sm_lid, u8 sm_sl)
{
	struct ib_mad_agent *agent = dev->trap_agent;
	struct rdma_ah_attr attr = {};
	struct ib_mad_send_buf *buf;
	struct ib_ah *ah;

	attr.type = RDMA_AH_ATTR_TYPE_IB;
	rdma_ah_set_port_num(&attr, RNIC_PORT);
	rdma_ah_set_dlid(&attr, sm_lid);
	rdma_ah_set_sl(&attr, sm_sl);
	ah = rdma_create_ah(agent->qp->pd, &attr, RDMA_CREATE_AH_SLEEPABLE);
	if (IS_ERR(ah))
		goto fail;
	buf = ib_create_send_mad(agent, 0, 0, 0, IB_MGMT_MAD_HDR,
				 IB_MGMT_MAD_DATA, GFP_KERNEL,
				 IB_MGMT_BASE_VERSION);
	if (IS_ERR(buf)) {
		rdma_destroy_ah(ah, RDMA_DESTROY_AH_SLEEPABLE);
		goto fail;
	}
	memcpy(buf->mad, mad, sizeof(*mad));
	buf->ah = ah;
	if (!ib_post_send_mad(buf, NULL))
		return;
	ib_free_send_mad(buf);
	rdma_destroy_ah(ah, RDMA_DESTROY_AH_SLEEPABLE);
fail:
	dev_warn_ratelimited(&dev->pdev->dev, "trap %u to the SM not sent\n",
			     be16_to_cpup((const __be16 *)
					  (((const struct ib_smp *)mad)->data + 4)));
}

/*
 * Every trap the SMA holds, as HCA firmware hands its traps to the
 * driver: taken with MAD_IFC, sent to where PortInfo says the SM is.
 */
static void rnic_ib_send_traps(struct rnic_dev *dev)
{
	struct rnic_port_attr p;
	struct ib_mad *mad;
	bool reply;

	mad = kzalloc(sizeof(*mad), GFP_KERNEL);
	if (!mad)
		return;
	while (!rnic_cmd_mad_ifc(dev, RNIC_MAD_IFC_TRAP, 0, NULL, mad,
				 &reply) && reply) {
		if (rnic_cmd_query_port(dev, RNIC_PORT, &p))
			break;
		if (p.sm_lid)
			rnic_ib_send_trap(dev, mad, le16_to_cpu(p.sm_lid),
					  p.sm_sl & 0xf);
	}
	kfree(mad);
}

/*
 * After ib_register_device(): the MAD layer has its QP0 now.  The SMA
 * gets the node description the stack gave the device, which it then
 * reports to the fabric, and the capability bits (none yet after a
 * reset, which cleared them in the device too).
 */
int rnic_ib_start(struct rnic_dev *dev)
{
	struct ib_mad_agent *agent;
	int err;

	err = rnic_ib_push_node_desc(dev);
	if (!err && dev->ib_cap_set)
		err = rnic_ib_push_cap_mask(dev, dev->ib_cap_set);
	if (err)
		return err;
	agent = ib_register_mad_agent(&dev->ibdev, RNIC_PORT, IB_QPT_SMI, NULL,
				      0, rnic_ib_trap_sent, NULL, dev, 0);
	if (IS_ERR(agent))
		return PTR_ERR(agent);
	dev->trap_agent = agent;
	return 0;
}

void rnic_ib_stop(struct rnic_dev *dev)
{
	if (dev->trap_agent)
		ib_unregister_mad_agent(dev->trap_agent);
	dev->trap_agent = NULL;
}

void rnic_ib_dispatch_events(struct rnic_dev *dev)
{
	/* In the order a port comes up: the SM, the LID, the keys, ACTIVE. */
	static const enum ib_event_type order[] = {
		IB_EVENT_PORT_ERR, IB_EVENT_SM_CHANGE, IB_EVENT_LID_CHANGE,
		IB_EVENT_PKEY_CHANGE, IB_EVENT_PORT_ACTIVE,
	};
	struct ib_event ev = {
		.device = &dev->ibdev,
		.element.port_num = RNIC_PORT,
	};
	unsigned int i;

	if (!dev->ib_registered)
		return;
	for (i = 0; i < ARRAY_SIZE(order); i++) {
		if (!test_and_clear_bit(order[i], &dev->ib_events))
			continue;
		ev.event = order[i];
		ib_dispatch_event(&ev);
	}
	if (test_and_clear_bit(RNIC_IB_TRAP_PENDING, &dev->ib_events))
		rnic_ib_send_traps(dev);
}

/* A path or AH of an IB port: by LID, with a GRH only when asked. */
int rnic_ib_ah_to_av(const struct rdma_ah_attr *ah, struct rnic_av *av)
{
	memset(av, 0, sizeof(*av));
	av->net_type = RNIC_NET_IB;
	av->ib.dlid = cpu_to_le16(rdma_ah_get_dlid(ah));
	av->ib.src_path_bits = rdma_ah_get_path_bits(ah) & 0x7f;
	av->sl = rdma_ah_get_sl(ah) & 0xf;
	if (rdma_ah_get_ah_flags(ah) & IB_AH_GRH) {
		const struct ib_global_route *grh = rdma_ah_read_grh(ah);

		av->ib.flags = RNIC_AV_IB_GRH;
		memcpy(av->dgid, grh->dgid.raw, sizeof(av->dgid));
		av->sgid_index = grh->sgid_index;
		av->hop_limit = grh->hop_limit;
		av->flow_label = cpu_to_le32(grh->flow_label & 0xfffff);
		av->traffic_class = grh->traffic_class;
	}
	return 0;
}

void rnic_ib_av_to_ah(const struct rnic_av *av, struct rdma_ah_attr *ah)
{
	union ib_gid dgid;

	memset(ah, 0, sizeof(*ah));
	ah->type = RDMA_AH_ATTR_TYPE_IB;
	rdma_ah_set_port_num(ah, RNIC_PORT);
	rdma_ah_set_dlid(ah, le16_to_cpu(av->ib.dlid));
	rdma_ah_set_path_bits(ah, av->ib.src_path_bits);
	rdma_ah_set_sl(ah, av->sl);
	if (av->ib.flags & RNIC_AV_IB_GRH) {
		memcpy(dgid.raw, av->dgid, sizeof(dgid.raw));
		rdma_ah_set_grh(ah, &dgid, le32_to_cpu(av->flow_label),
				av->sgid_index, av->hop_limit,
				av->traffic_class);
	}
}
