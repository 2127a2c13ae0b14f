// SPDX-License-Identifier: GPL-2.0
/*
 * rnic Ethernet function.
 *
 * One TX and one RX ring of struct rnic_net_desc with free-running
 * producer indices written to TXQ_PI/RXQ_PI.  The device sets DONE in
 * each descriptor it has consumed and raises NET_VECTOR unless masked;
 * NAPI masks the interrupt while it polls both rings.  Frames are
 * linear: TX linearizes, RX buffers hold a whole frame.
 */
#include <linux/etherdevice.h>
#include <linux/interrupt.h>
#include <linux/dma-mapping.h>
#include <linux/if_vlan.h>

#include "rnic.h"

#define RNIC_NET_NAPI_WEIGHT	64
#define RNIC_NET_MIN_BUF	1536
/* A failed atomic refill is retried after reclaim has had a moment. */
#define RNIC_NET_REFILL_DELAY	(HZ / 10)

static inline struct rnic_net *rnic_net_priv(struct net_device *ndev)
{
	return netdev_priv(ndev);
}

static u32 rnic_net_mask(const struct rnic_net *net)
{
	return net->ring_size - 1;
}

static bool rnic_desc_done(const struct rnic_net_desc *d)
{
	return READ_ONCE(d->status) & RNIC_NET_DESC_DONE;
}

static int rnic_net_rx_fill_one(struct rnic_net *net, u32 idx, gfp_t gfp)
{
	struct rnic_net_buf *b = &net->rx_buf[idx];
	struct rnic_net_desc *d = &net->rxq[idx];
	struct device *dmadev = &net->dev->pdev->dev;
	struct sk_buff *skb;

	skb = __netdev_alloc_skb_ip_align(net->ndev, net->rx_buf_len, gfp);
	if (!skb)
		return -ENOMEM;
	b->dma = dma_map_single(dmadev, skb->data, net->rx_buf_len,
				DMA_FROM_DEVICE);
	if (dma_mapping_error(dmadev, b->dma)) {
		dev_kfree_skb_any(skb);
		return -ENOMEM;
	}
	b->skb = skb;
	b->len = net->rx_buf_len;
	d->addr = cpu_to_le64(b->dma);
	d->len = 0;
	d->buf_len = cpu_to_le16(net->rx_buf_len);
	d->status = 0;
	return 0;
}

/*
 * Post buffers into every free RX slot.  Returns false when a slot had to
 * stay empty.  The caller owns the ring: NAPI, or whoever disabled it.
 */
static bool rnic_net_rx_refill(struct rnic_net *net, gfp_t gfp)
{
	u32 old = net->rx_pi;
	bool full = true;

	while (net->rx_pi - net->rx_ci < net->ring_size) {
		if (rnic_net_rx_fill_one(net, net->rx_pi & rnic_net_mask(net),
					 gfp)) {
			full = false;
			break;
		}
		net->rx_pi++;
	}
	if (net->rx_pi != old) {
		dma_wmb();
		rnic_wr32(net->dev, RNIC_REG_RXQ_PI, net->rx_pi);
	}
	return full;
}

static void rnic_net_schedule_refill(struct rnic_net *net)
{
	spin_lock_bh(&net->refill_lock);
	if (net->refill_enabled)
		schedule_delayed_work(&net->refill_work, RNIC_NET_REFILL_DELAY);
	spin_unlock_bh(&net->refill_lock);
}

static void rnic_net_refill_work(struct work_struct *work)
{
	struct rnic_net *net = container_of(to_delayed_work(work),
					    struct rnic_net, refill_work);
	bool full;

	napi_disable(&net->napi);
	full = rnic_net_rx_refill(net, GFP_KERNEL);
	napi_enable(&net->napi);
	if (!full)
		rnic_net_schedule_refill(net);
	/*
	 * Frames that landed in the new buffers while NAPI was off raised an
	 * interrupt that could not schedule it; poll for them now.
	 */
	local_bh_disable();
	napi_schedule(&net->napi);
	local_bh_enable();
}

static int rnic_net_rx(struct rnic_net *net, int budget)
{
	struct device *dmadev = &net->dev->pdev->dev;
	struct net_device *ndev = net->ndev;
	int done = 0;

	while (done < budget && net->rx_ci != net->rx_pi) {
		u32 idx = net->rx_ci & rnic_net_mask(net);
		struct rnic_net_desc *d = &net->rxq[idx];
		struct rnic_net_buf *b = &net->rx_buf[idx];
		struct sk_buff *skb;
		u32 len;

		if (!rnic_desc_done(d))
			break;
		dma_rmb();
		len = le16_to_cpu(d->len);
		dma_unmap_single(dmadev, b->dma, b->len, DMA_FROM_DEVICE);
		skb = b->skb;
		b->skb = NULL;
		net->rx_ci++;
		done++;

		if ((d->status & RNIC_NET_DESC_ERR) || len < ETH_HLEN ||
		    len > b->len) {
			ndev->stats.rx_errors++;
			dev_kfree_skb_any(skb);
			continue;
		}
		skb_put(skb, len);
		skb->protocol = eth_type_trans(skb, ndev);
		ndev->stats.rx_packets++;
		ndev->stats.rx_bytes += len;
		napi_gro_receive(&net->napi, skb);
	}
	if (!rnic_net_rx_refill(net, GFP_ATOMIC))
		rnic_net_schedule_refill(net);
	return done;
}

static void rnic_net_tx_reclaim(struct rnic_net *net, int budget)
{
	struct device *dmadev = &net->dev->pdev->dev;
	struct net_device *ndev = net->ndev;
	unsigned int pkts = 0, bytes = 0;

	while (net->tx_ci != net->tx_pi) {
		u32 idx = net->tx_ci & rnic_net_mask(net);
		struct rnic_net_desc *d = &net->txq[idx];
		struct rnic_net_buf *b = &net->tx_buf[idx];

		if (!rnic_desc_done(d))
			break;
		dma_rmb();
		dma_unmap_single(dmadev, b->dma, b->len, DMA_TO_DEVICE);
		if (d->status & RNIC_NET_DESC_ERR) {
			ndev->stats.tx_errors++;
		} else {
			pkts++;
			bytes += b->len;
		}
		napi_consume_skb(b->skb, budget);
		b->skb = NULL;
		net->tx_ci++;
	}
	ndev->stats.tx_packets += pkts;
	ndev->stats.tx_bytes += bytes;
	if (pkts && netif_queue_stopped(ndev) &&
	    net->tx_pi - net->tx_ci < net->ring_size - 1)
		netif_wake_queue(ndev);
}

static bool rnic_net_pending(struct rnic_net *net)
{
	if (net->rx_ci != net->rx_pi &&
	    rnic_desc_done(&net->rxq[net->rx_ci & rnic_net_mask(net)]))
		return true;
	if (net->tx_ci != net->tx_pi &&
	    rnic_desc_done(&net->txq[net->tx_ci & rnic_net_mask(net)]))
		return true;
	return false;
}

static int rnic_net_poll(struct napi_struct *napi, int budget)
{
	struct rnic_net *net = container_of(napi, struct rnic_net, napi);
	int done;

	netif_tx_lock(net->ndev);
	rnic_net_tx_reclaim(net, budget);
	netif_tx_unlock(net->ndev);
	done = rnic_net_rx(net, budget);

	if (done < budget && napi_complete_done(napi, done)) {
		rnic_wr32(net->dev, RNIC_REG_NET_IRQ_MASK, 0);
		/* Work that arrived while masked raised no interrupt. */
		if (rnic_net_pending(net) && napi_schedule_prep(napi)) {
			rnic_wr32(net->dev, RNIC_REG_NET_IRQ_MASK, 1);
			__napi_schedule(napi);
		}
	}
	return done;
}

static irqreturn_t rnic_net_irq(int irq, void *data)
{
	struct rnic_net *net = data;

	if (!READ_ONCE(net->up) || !rnic_net_pending(net))
		return IRQ_NONE;
	if (napi_schedule_prep(&net->napi)) {
		rnic_wr32(net->dev, RNIC_REG_NET_IRQ_MASK, 1);
		__napi_schedule(&net->napi);
	}
	return IRQ_HANDLED;
}

static netdev_tx_t rnic_net_xmit(struct sk_buff *skb, struct net_device *ndev)
{
	struct rnic_net *net = rnic_net_priv(ndev);
	struct device *dmadev = &net->dev->pdev->dev;
	struct rnic_net_desc *d;
	struct rnic_net_buf *b;
	dma_addr_t dma;
	u32 idx;

	if (skb_linearize(skb))
		goto drop;
	/* skb_put_padto() frees the skb on failure. */
	if (skb_put_padto(skb, ETH_ZLEN))
		goto drop_nofree;
	if (skb->len > RNIC_NET_MAX_FRAME)
		goto drop;

	if (net->tx_pi - net->tx_ci >= net->ring_size) {
		netif_stop_queue(ndev);
		return NETDEV_TX_BUSY;
	}

	dma = dma_map_single(dmadev, skb->data, skb->len, DMA_TO_DEVICE);
	if (dma_mapping_error(dmadev, dma))
		goto drop;

	idx = net->tx_pi & rnic_net_mask(net);
	b = &net->tx_buf[idx];
	d = &net->txq[idx];
	b->skb = skb;
	b->dma = dma;
	b->len = skb->len;
	d->addr = cpu_to_le64(dma);
	d->len = cpu_to_le16(skb->len);
	d->buf_len = 0;
	d->status = 0;
	net->tx_pi++;
	skb_tx_timestamp(skb);
	dma_wmb();
	rnic_wr32(net->dev, RNIC_REG_TXQ_PI, net->tx_pi);

	if (net->tx_pi - net->tx_ci >= net->ring_size)
		netif_stop_queue(ndev);
	return NETDEV_TX_OK;

drop:
	dev_kfree_skb_any(skb);
drop_nofree:
	ndev->stats.tx_dropped++;
	return NETDEV_TX_OK;
}

static void rnic_net_free_rings(struct rnic_net *net)
{
	struct device *dmadev = &net->dev->pdev->dev;
	size_t bytes = net->ring_size * sizeof(struct rnic_net_desc);
	u32 i;

	for (i = 0; i < net->ring_size; i++) {
		if (net->tx_buf && net->tx_buf[i].skb) {
			dma_unmap_single(dmadev, net->tx_buf[i].dma,
					 net->tx_buf[i].len, DMA_TO_DEVICE);
			dev_kfree_skb_any(net->tx_buf[i].skb);
		}
		if (net->rx_buf && net->rx_buf[i].skb) {
			dma_unmap_single(dmadev, net->rx_buf[i].dma,
					 net->rx_buf[i].len, DMA_FROM_DEVICE);
			dev_kfree_skb_any(net->rx_buf[i].skb);
		}
	}
	kfree(net->tx_buf);
	kfree(net->rx_buf);
	net->tx_buf = NULL;
	net->rx_buf = NULL;
	if (net->txq)
		dma_free_coherent(dmadev, bytes, net->txq, net->txq_dma);
	if (net->rxq)
		dma_free_coherent(dmadev, bytes, net->rxq, net->rxq_dma);
	net->txq = NULL;
	net->rxq = NULL;
}

static int rnic_net_alloc_rings(struct rnic_net *net)
{
	struct device *dmadev = &net->dev->pdev->dev;
	size_t bytes = net->ring_size * sizeof(struct rnic_net_desc);

	net->txq = dma_alloc_coherent(dmadev, bytes, &net->txq_dma,
				      GFP_KERNEL);
	net->rxq = dma_alloc_coherent(dmadev, bytes, &net->rxq_dma,
				      GFP_KERNEL);
	net->tx_buf = kcalloc(net->ring_size, sizeof(*net->tx_buf),
			      GFP_KERNEL);
	net->rx_buf = kcalloc(net->ring_size, sizeof(*net->rx_buf),
			      GFP_KERNEL);
	if (!net->txq || !net->rxq || !net->tx_buf || !net->rx_buf) {
		rnic_net_free_rings(net);
		return -ENOMEM;
	}
	net->tx_pi = 0;
	net->tx_ci = 0;
	net->rx_pi = 0;
	net->rx_ci = 0;
	return 0;
}

static u32 rnic_net_ctrl_flags(struct net_device *ndev)
{
	u32 ctrl = RNIC_NET_CTRL_RX_EN | RNIC_NET_CTRL_TX_EN;

	if (ndev->flags & IFF_PROMISC)
		ctrl |= RNIC_NET_CTRL_PROMISC;
	if (ndev->flags & IFF_ALLMULTI || !netdev_mc_empty(ndev))
		ctrl |= RNIC_NET_CTRL_ALLMULTI;
	return ctrl;
}

/*
 * The rings live as long as the device: they are programmed once while
 * NET_CTRL is clear, and open/stop only enable and disable the function.
 */
static int rnic_net_rings_init(struct rnic_net *net)
{
	struct rnic_dev *dev = net->dev;
	u32 log = ilog2(net->ring_size);
	int err;

	net->rx_buf_len = max_t(u32, RNIC_NET_MIN_BUF,
				net->ndev->mtu + ETH_HLEN + VLAN_HLEN);
	err = rnic_net_alloc_rings(net);
	if (err)
		return err;

	rnic_wr32(dev, RNIC_REG_NET_IRQ_MASK, 1);
	rnic_wr32(dev, RNIC_REG_NET_CTRL, 0);
	rnic_wr32(dev, RNIC_REG_TXQ_BASE_LO, lower_32_bits(net->txq_dma));
	rnic_wr32(dev, RNIC_REG_TXQ_BASE_HI, upper_32_bits(net->txq_dma));
	rnic_wr32(dev, RNIC_REG_TXQ_LOG_SIZE, log);
	rnic_wr32(dev, RNIC_REG_RXQ_BASE_LO, lower_32_bits(net->rxq_dma));
	rnic_wr32(dev, RNIC_REG_RXQ_BASE_HI, upper_32_bits(net->rxq_dma));
	rnic_wr32(dev, RNIC_REG_RXQ_LOG_SIZE, log);
	rnic_wr32(dev, RNIC_REG_NET_VECTOR,
		  dev->nvec > RNIC_VEC_NET ? RNIC_VEC_NET : RNIC_VEC_ASYNC);
	/* Slots left empty here are filled by the first poll after open. */
	rnic_net_rx_refill(net, GFP_KERNEL);
	return 0;
}

static int rnic_net_open(struct net_device *ndev)
{
	struct rnic_net *net = rnic_net_priv(ndev);
	struct rnic_dev *dev = net->dev;

	napi_enable(&net->napi);
	spin_lock_bh(&net->refill_lock);
	net->refill_enabled = true;
	spin_unlock_bh(&net->refill_lock);
	rnic_wr32(dev, RNIC_REG_NET_CTRL, rnic_net_ctrl_flags(ndev));
	WRITE_ONCE(net->up, true);
	rnic_wr32(dev, RNIC_REG_NET_IRQ_MASK, 0);
	netif_start_queue(ndev);
	rnic_net_link_update(dev);
	/* Pick up anything completed while the function was down. */
	napi_schedule(&net->napi);
	return 0;
}

static int rnic_net_stop(struct net_device *ndev)
{
	struct rnic_net *net = rnic_net_priv(ndev);
	struct rnic_dev *dev = net->dev;

	netif_stop_queue(ndev);
	WRITE_ONCE(net->up, false);
	rnic_wr32(dev, RNIC_REG_NET_IRQ_MASK, 1);
	rnic_wr32(dev, RNIC_REG_NET_CTRL, 0);
	/* The refill work disables NAPI itself: it must be gone first. */
	spin_lock_bh(&net->refill_lock);
	net->refill_enabled = false;
	spin_unlock_bh(&net->refill_lock);
	cancel_delayed_work_sync(&net->refill_work);
	napi_disable(&net->napi);
	return 0;
}

static void rnic_net_set_rx_mode(struct net_device *ndev)
{
	struct rnic_net *net = rnic_net_priv(ndev);

	if (netif_running(ndev))
		rnic_wr32(net->dev, RNIC_REG_NET_CTRL,
			  rnic_net_ctrl_flags(ndev));
}

/* Buffers posted from now on are sized for the new MTU. */
static int rnic_net_change_mtu(struct net_device *ndev, int mtu)
{
	struct rnic_net *net = rnic_net_priv(ndev);

	napi_synchronize(&net->napi);
	WRITE_ONCE(ndev->mtu, mtu);
	WRITE_ONCE(net->rx_buf_len, max_t(u32, RNIC_NET_MIN_BUF,
					  mtu + ETH_HLEN + VLAN_HLEN));
	return 0;
}

static const struct net_device_ops rnic_netdev_ops = {
	.ndo_open = rnic_net_open,
	.ndo_stop = rnic_net_stop,
	.ndo_start_xmit = rnic_net_xmit,
	.ndo_set_rx_mode = rnic_net_set_rx_mode,
	.ndo_change_mtu = rnic_net_change_mtu,
	.ndo_validate_addr = eth_validate_addr,
};

/*
 * Carrier and RDMA port state follow STATUS.LINK_UP.  The device raises
 * PORT_ACTIVE/PORT_DOWN on EQ 0 for every change after EQ 0 exists, and
 * the driver reads the state once itself when the netdev and the ib device
 * appear, so no change is missed and nothing needs polling.
 */
void rnic_net_link_update(struct rnic_dev *dev)
{
	struct net_device *ndev;
	bool up;

	mutex_lock(&dev->link_lock);
	ndev = dev->ndev;
	if (ndev) {
		up = rnic_rd32(dev, RNIC_REG_STATUS) & RNIC_STATUS_LINK_UP;
		if (up && !netif_carrier_ok(ndev))
			netif_carrier_on(ndev);
		else if (!up && netif_carrier_ok(ndev))
			netif_carrier_off(ndev);
		if (!dev->ib)
			rnic_port_event(dev, up);
	}
	if (dev->ib)
		rnic_ib_dispatch_events(dev);
	mutex_unlock(&dev->link_lock);
}

void rnic_link_work(struct work_struct *work)
{
	rnic_net_link_update(container_of(work, struct rnic_dev, link_work));
}

int rnic_net_init(struct rnic_dev *dev)
{
	struct net_device *ndev;
	struct rnic_net *net;
	u32 lo, hi;
	u8 mac[ETH_ALEN];
	int vec, err;

	ndev = alloc_etherdev(sizeof(*net));
	if (!ndev)
		return -ENOMEM;
	SET_NETDEV_DEV(ndev, &dev->pdev->dev);
	net = netdev_priv(ndev);
	net->dev = dev;
	net->ndev = ndev;
	net->ring_size = 1u << RNIC_NET_LOG_SIZE;
	INIT_DELAYED_WORK(&net->refill_work, rnic_net_refill_work);
	spin_lock_init(&net->refill_lock);

	lo = rnic_rd32(dev, RNIC_REG_MAC_LO);
	hi = rnic_rd32(dev, RNIC_REG_MAC_HI);
	mac[0] = lo & 0xff;
	mac[1] = (lo >> 8) & 0xff;
	mac[2] = (lo >> 16) & 0xff;
	mac[3] = (lo >> 24) & 0xff;
	mac[4] = hi & 0xff;
	mac[5] = (hi >> 8) & 0xff;
	if (is_valid_ether_addr(mac)) {
		eth_hw_addr_set(ndev, mac);
	} else {
		dev_warn(&dev->pdev->dev, "invalid MAC %pM, using a random one\n",
			 mac);
		eth_hw_addr_random(ndev);
	}

	ndev->netdev_ops = &rnic_netdev_ops;
	ndev->ethtool_ops = &rnic_ethtool_ops;
	ndev->min_mtu = ETH_MIN_MTU;
	ndev->max_mtu = RNIC_NET_MAX_MTU;
	ndev->mtu = RNIC_NET_DEFAULT_MTU;
	netif_napi_add(ndev, &net->napi, rnic_net_poll);
	err = rnic_net_rings_init(net);
	if (err)
		goto err_napi_only;

	vec = dev->nvec > RNIC_VEC_NET ? RNIC_VEC_NET : RNIC_VEC_ASYNC;
	snprintf(net->irq_name, sizeof(net->irq_name), "rnic-net@%s",
		 pci_name(dev->pdev));
	err = request_irq(pci_irq_vector(dev->pdev, vec), rnic_net_irq,
			  IRQF_SHARED, net->irq_name, net);
	if (err)
		goto err_napi;
	net->irq_requested = true;

	netif_carrier_off(ndev);
	mutex_lock(&dev->link_lock);
	WRITE_ONCE(dev->ndev, ndev);
	mutex_unlock(&dev->link_lock);
	err = register_netdev(ndev);
	if (err) {
		mutex_lock(&dev->link_lock);
		WRITE_ONCE(dev->ndev, NULL);
		mutex_unlock(&dev->link_lock);
		goto err_irq;
	}
	rnic_net_link_update(dev);
	return 0;

err_irq:
	free_irq(pci_irq_vector(dev->pdev, vec), net);
err_napi:
	rnic_wr32(dev, RNIC_REG_NET_CTRL, 0);
	rnic_net_free_rings(net);
err_napi_only:
	netif_napi_del(&net->napi);
	free_netdev(ndev);
	return err;
}

void rnic_net_destroy(struct rnic_dev *dev)
{
	struct net_device *ndev = dev->ndev;
	struct rnic_net *net;
	int vec;

	if (!ndev)
		return;
	net = netdev_priv(ndev);
	mutex_lock(&dev->link_lock);
	WRITE_ONCE(dev->ndev, NULL);
	mutex_unlock(&dev->link_lock);
	cancel_work_sync(&dev->link_work);
	unregister_netdev(ndev);
	vec = dev->nvec > RNIC_VEC_NET ? RNIC_VEC_NET : RNIC_VEC_ASYNC;
	if (net->irq_requested)
		free_irq(pci_irq_vector(dev->pdev, vec), net);
	netif_napi_del(&net->napi);
	rnic_wr32(dev, RNIC_REG_NET_IRQ_MASK, 1);
	rnic_wr32(dev, RNIC_REG_NET_CTRL, 0);
	rnic_rd32(dev, RNIC_REG_STATUS);
	rnic_net_free_rings(net);
	free_netdev(ndev);
}
