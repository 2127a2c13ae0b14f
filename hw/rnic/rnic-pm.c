/*
 * rnic: power states, the deferred function reset and guarded DMA
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * The function's config space is reached through the host bridge (the
 * legacy 0xcf8/0xcfc ports or, on q35, the ECAM window "pcie-mmcfg"),
 * whose MemoryRegion is not ours: the device's re-entrancy guard does not
 * cover it.  A CQE, an EQE or an MSI-X message that the device itself
 * writes onto its own ECAM page therefore lands in rnic_pm_write_config
 * in the middle of the bottom half.  So a config-space write only records
 * that a reset is due, and the reset runs where nothing of the device is
 * on the stack: at the top and the end of the bottom half, and on entry
 * to the BAR handlers, which the guard keeps from nesting inside the
 * bottom half.
 *
 * Outside D0 the device does nothing that the guest could see: no DMA,
 * no interrupt, no bottom-half work.  QEMU unmaps the BARs in D3hot;
 * frames that arrive meanwhile are dropped and counted, and the work
 * that timers or earlier doorbells left waits for D0, whose entry resets
 * the function anyway (No_Soft_Reset is clear).
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "hw/pci/pci.h"
#include "rnic.h"
#include "trace.h"

/* PMCSR PowerState values. */
#define RNIC_PM_D0      0
#define RNIC_PM_D3HOT   3

static uint8_t rnic_pm_state(PCIDevice *pdev)
{
    return pci_get_word(pdev->config + pdev->pm_cap + PCI_PM_CTRL) &
           PCI_PM_CTRL_STATE_MASK;
}

bool rnic_pm_d0(RnicState *s)
{
    return rnic_pm_state(PCI_DEVICE(s)) == RNIC_PM_D0;
}

void rnic_pm_request_reset(RnicState *s, const char *why)
{
    trace_rnic_pm_reset_request(why);
    s->reset_pending = true;
    if (s->bh) {
        qemu_bh_schedule(s->bh);
    }
}

bool rnic_pm_run_reset(RnicState *s)
{
    if (!s->reset_pending) {
        return false;
    }
    s->pm.resets++;
    rnic_reset(s);      /* clears reset_pending */
    return true;
}

MemTxResult rnic_dma_read(RnicState *s, dma_addr_t addr, void *buf,
                          dma_addr_t len)
{
    if (rnic_halted(s)) {
        s->pm.dma_refused++;
        trace_rnic_pm_dma_refused(false, addr, len);
        return MEMTX_ACCESS_ERROR;
    }
    return pci_dma_read(PCI_DEVICE(s), addr, buf, len);
}

MemTxResult rnic_dma_write(RnicState *s, dma_addr_t addr, const void *buf,
                           dma_addr_t len)
{
    if (rnic_halted(s)) {
        s->pm.dma_refused++;
        trace_rnic_pm_dma_refused(true, addr, len);
        return MEMTX_ACCESS_ERROR;
    }
    if (rnic_inject_dma_fail(s, addr, len)) {
        /* As an IOMMU refusing the page: every caller's error path. */
        return MEMTX_ACCESS_ERROR;
    }
    return pci_dma_write(PCI_DEVICE(s), addr, buf, len);
}

/*
 * The function-level reset of a conventional PCI function: its power
 * management capability leaves No_Soft_Reset clear, which promises that
 * D3hot -> D0 resets the function.  Linux resets it that way through
 * /sys/bus/pci/devices/.../reset (the "pm" method), saving and restoring
 * config space (MSI-X included) around it; the device's own state goes.
 */
void rnic_pm_write_config(PCIDevice *pdev, uint32_t addr, uint32_t val,
                          int len)
{
    RnicState *s = RNIC(pdev);
    uint8_t before = rnic_pm_state(pdev);
    uint8_t after;

    pci_default_write_config(pdev, addr, val, len);
    after = rnic_pm_state(pdev);
    if (before == after) {
        return;
    }
    trace_rnic_pm_state(before, after);
    if (before == RNIC_PM_D3HOT && after == RNIC_PM_D0) {
        rnic_pm_request_reset(s, "D3hot->D0");
    }
}
