// SPDX-License-Identifier: GPL-2.0
/*
 * rnic ethtool support: driver and device identity, and statistics.
 *
 * ethtool -S shows the device's counters under the names the RDMA port's
 * hw_counters use, then the counts the Ethernet driver keeps itself, so
 * that one command shows the RoCE and the plain Ethernet traffic of the
 * function.  The driver's counts carry a netdev_ prefix: the device has
 * RoCE counters called rx_bytes, tx_bytes and rx_dropped too.
 */
#include <linux/ethtool.h>
#include <linux/netdevice.h>

#include "rnic.h"

#define RNIC_NETDEV_STAT(f) \
	{ "netdev_" #f, offsetof(struct net_device_stats, f) }

/* The ndev->stats fields rnic_netdev.c updates. */
static const struct {
	const char *name;
	size_t offset;
} rnic_netdev_stats[] = {
	RNIC_NETDEV_STAT(rx_packets),
	RNIC_NETDEV_STAT(rx_bytes),
	RNIC_NETDEV_STAT(rx_errors),
	RNIC_NETDEV_STAT(tx_packets),
	RNIC_NETDEV_STAT(tx_bytes),
	RNIC_NETDEV_STAT(tx_errors),
	RNIC_NETDEV_STAT(tx_dropped),
};

/* The device's counters, the driver's, then the netdev's. */
#define RNIC_HW_STATS	(RNIC_CNT_MAX + RNIC_DRV_CNT_MAX)
#define RNIC_NUM_STATS	(RNIC_HW_STATS + ARRAY_SIZE(rnic_netdev_stats))

static struct rnic_dev *rnic_ndev_to_dev(struct net_device *ndev)
{
	struct rnic_net *net = netdev_priv(ndev);

	return net->dev;
}

static void rnic_get_drvinfo(struct net_device *ndev,
			     struct ethtool_drvinfo *info)
{
	struct rnic_dev *dev = rnic_ndev_to_dev(ndev);
	u32 abi = le32_to_cpu(dev->hw.abi_version);
	char fw[IB_FW_VERSION_NAME_MAX];
	char buf[sizeof(fw) + 24];

	strscpy(info->driver, DRV_NAME, sizeof(info->driver));
	strscpy(info->version, RNIC_DRV_VERSION, sizeof(info->version));
	/*
	 * The same firmware string as ibv_devinfo's fw_ver, and the ABI the
	 * device reported at probe.  The netdev is registered before the
	 * RDMA device: a query in between has no firmware string yet.
	 */
	ib_get_device_fw_str(&dev->ibdev, fw);
	snprintf(buf, sizeof(buf), "%s%sabi %u.%u", fw, fw[0] ? " " : "",
		 abi >> 16, abi & 0xffff);
	/* Only an absurd firmware string would not fit ethtool's 32 bytes. */
	strscpy(info->fw_version, buf, sizeof(info->fw_version));
	strscpy(info->bus_info, pci_name(dev->pdev), sizeof(info->bus_info));
}

static int rnic_get_sset_count(struct net_device *ndev, int sset)
{
	if (sset != ETH_SS_STATS)
		return -EOPNOTSUPP;
	return RNIC_NUM_STATS;
}

static void rnic_get_strings(struct net_device *ndev, u32 sset, u8 *data)
{
	unsigned int i;

	if (sset != ETH_SS_STATS)
		return;
	for (i = 0; i < RNIC_HW_STATS; i++)
		ethtool_sprintf(&data, "%s", rnic_counter_descs[i].name);
	for (i = 0; i < ARRAY_SIZE(rnic_netdev_stats); i++)
		ethtool_sprintf(&data, "%s", rnic_netdev_stats[i].name);
}

static void rnic_get_ethtool_stats(struct net_device *ndev,
				   struct ethtool_stats *stats, u64 *data)
{
	struct rnic_dev *dev = rnic_ndev_to_dev(ndev);
	const u8 *ns = (const u8 *)&ndev->stats;
	unsigned int i;

	for (i = 0; i < RNIC_CNT_MAX; i++)
		*data++ = rnic_read_counter(dev, i);
	for (i = 0; i < RNIC_DRV_CNT_MAX; i++)
		*data++ = atomic64_read(&dev->drv_cnt[i]);
	/* Updated by NAPI and xmit without a lock: a snapshot, as in sysfs. */
	for (i = 0; i < ARRAY_SIZE(rnic_netdev_stats); i++)
		*data++ = READ_ONCE(*(const unsigned long *)
				    (ns + rnic_netdev_stats[i].offset));
}

const struct ethtool_ops rnic_ethtool_ops = {
	.get_drvinfo = rnic_get_drvinfo,
	.get_link = ethtool_op_get_link,
	.get_sset_count = rnic_get_sset_count,
	.get_strings = rnic_get_strings,
	.get_ethtool_stats = rnic_get_ethtool_stats,
};
