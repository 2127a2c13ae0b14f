// SPDX-License-Identifier: GPL-2.0
/*
 * rnic flow steering: ib_create_flow rules that pick the frames a raw
 * packet QP receives.  The verbs specs become one device match; what the
 * device cannot match on is refused rather than silently ignored.
 */

#include <linux/etherdevice.h>
#include <rdma/ib_verbs.h>

#include "rnic.h"
#include "rnic_cmdq.h"

struct rnic_flow {
	struct ib_flow ibflow;
	u32 handle;
	u16 uctx;
};

static bool rnic_mem_zero(const void *p, size_t len)
{
	return !memchr_inv(p, 0, len);
}

static int rnic_flow_eth(struct rnic_flow_match *m,
			 const struct ib_flow_spec_eth *e)
{
	ether_addr_copy(m->dmac, e->val.dst_mac);
	ether_addr_copy(m->dmac_mask, e->mask.dst_mac);
	ether_addr_copy(m->smac, e->val.src_mac);
	ether_addr_copy(m->smac_mask, e->mask.src_mac);
	memcpy(m->ethertype, &e->val.ether_type, 2);
	memcpy(m->ethertype_mask, &e->mask.ether_type, 2);
	memcpy(m->vlan_tci, &e->val.vlan_tag, 2);
	memcpy(m->vlan_tci_mask, &e->mask.vlan_tag, 2);
	return 0;
}

static int rnic_flow_ipv4(struct rnic_flow_match *m,
			  const struct ib_flow_spec_ipv4 *ip)
{
	if (m->ip_ver || ip->mask.tos || ip->mask.ttl || ip->mask.flags)
		return -EOPNOTSUPP;
	m->ip_ver = 4;
	memcpy(m->src_ip, &ip->val.src_ip, 4);
	memcpy(m->src_ip_mask, &ip->mask.src_ip, 4);
	memcpy(m->dst_ip, &ip->val.dst_ip, 4);
	memcpy(m->dst_ip_mask, &ip->mask.dst_ip, 4);
	m->ip_proto = ip->val.proto;
	m->ip_proto_mask = ip->mask.proto;
	return 0;
}

static int rnic_flow_ipv6(struct rnic_flow_match *m,
			  const struct ib_flow_spec_ipv6 *ip)
{
	if (m->ip_ver || ip->mask.flow_label || ip->mask.traffic_class ||
	    ip->mask.hop_limit)
		return -EOPNOTSUPP;
	m->ip_ver = 6;
	memcpy(m->src_ip, ip->val.src_ip, 16);
	memcpy(m->src_ip_mask, ip->mask.src_ip, 16);
	memcpy(m->dst_ip, ip->val.dst_ip, 16);
	memcpy(m->dst_ip_mask, ip->mask.dst_ip, 16);
	m->ip_proto = ip->val.next_hdr;
	m->ip_proto_mask = ip->mask.next_hdr;
	return 0;
}

static int rnic_flow_l4(struct rnic_flow_match *m,
			const struct ib_flow_spec_tcp_udp *l4, u8 kind)
{
	/* Ports only mean something within an IP header. */
	if (!m->ip_ver || m->l4)
		return -EOPNOTSUPP;
	m->l4 = kind;
	memcpy(m->src_port, &l4->val.src_port, 2);
	memcpy(m->src_port_mask, &l4->mask.src_port, 2);
	memcpy(m->dst_port, &l4->val.dst_port, 2);
	memcpy(m->dst_port_mask, &l4->mask.dst_port, 2);
	return 0;
}

static int rnic_flow_parse(struct ib_flow_attr *attr,
			   struct rnic_flow_match *m)
{
	u8 *p = (u8 *)attr->flows;
	unsigned int i;
	int err;

	for (i = 0; i < attr->num_of_specs; i++) {
		union ib_flow_spec *spec = (union ib_flow_spec *)p;

		switch (spec->type) {
		case IB_FLOW_SPEC_ETH:
			err = rnic_flow_eth(m, &spec->eth);
			break;
		case IB_FLOW_SPEC_IPV4:
			err = rnic_flow_ipv4(m, &spec->ipv4);
			break;
		case IB_FLOW_SPEC_IPV6:
			err = rnic_flow_ipv6(m, &spec->ipv6);
			break;
		case IB_FLOW_SPEC_TCP:
			err = rnic_flow_l4(m, &spec->tcp_udp, RNIC_FLOW_L4_TCP);
			break;
		case IB_FLOW_SPEC_UDP:
			err = rnic_flow_l4(m, &spec->tcp_udp, RNIC_FLOW_L4_UDP);
			break;
		default:
			/* Inner headers, tunnels, actions: not matched. */
			err = -EOPNOTSUPP;
		}
		if (err)
			return err;
		if (!spec->size)
			return -EINVAL;
		p += spec->size;
	}
	/* An IP spec's protocol must agree with a TCP/UDP spec after it. */
	if (m->l4 && m->ip_proto_mask &&
	    m->ip_proto != (m->l4 == RNIC_FLOW_L4_TCP ? IPPROTO_TCP :
							IPPROTO_UDP))
		return -EINVAL;
	if (m->ip_ver == 4 && !rnic_mem_zero(m->ethertype_mask, 2) &&
	    memcmp(m->ethertype, "\x08\x00", 2))
		return -EINVAL;
	return 0;
}

struct ib_flow *rnic_create_flow(struct ib_qp *ibqp,
				 struct ib_flow_attr *attr,
				 struct ib_udata *udata)
{
	struct rnic_dev *dev = to_rdev(ibqp->device);
	struct rnic_qp *qp = to_rqp(ibqp);
	struct rnic_cmd_create_flow cmd = {};
	struct rnic_flow *flow;
	int err;

	if (udata && udata->inlen && !ib_is_udata_cleared(udata, 0,
							  udata->inlen))
		return ERR_PTR(-EINVAL);
	if (qp->type != RNIC_QPT_RAW_PACKET)
		return ERR_PTR(-EOPNOTSUPP);
	/* Sniffer and default rules, and DONT_TRAP, have no device form. */
	if (attr->type != IB_FLOW_ATTR_NORMAL || attr->flags)
		return ERR_PTR(-EOPNOTSUPP);
	if (attr->port != RNIC_PORT)
		return ERR_PTR(-EINVAL);

	err = rnic_flow_parse(attr, &cmd.match);
	if (err)
		return ERR_PTR(err);

	flow = kzalloc(sizeof(*flow), GFP_KERNEL);
	if (!flow)
		return ERR_PTR(-ENOMEM);
	cmd.qpn = cpu_to_le32(qp->qpn);
	err = rnic_cmd_create_flow(dev, qp->uctx, &cmd, &flow->handle);
	if (err) {
		kfree(flow);
		return ERR_PTR(err);
	}
	flow->uctx = qp->uctx;
	return &flow->ibflow;
}

int rnic_destroy_flow(struct ib_flow *ibflow)
{
	struct rnic_flow *flow = container_of(ibflow, struct rnic_flow, ibflow);
	int err;

	/*
	 * Only a rule the device no longer has (after a function reset) can
	 * fail here, and then there is nothing left to undo.
	 */
	err = rnic_cmd_destroy_flow(to_rdev(ibflow->device), flow->uctx,
				    flow->handle);
	if (err)
		ibdev_dbg(ibflow->device, "flow %u: destroy: %d\n",
			  flow->handle, err);
	kfree(flow);
	return 0;
}
