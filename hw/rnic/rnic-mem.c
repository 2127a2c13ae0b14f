/*
 * rnic: page lists, memory regions, key checks and SGE copies
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * Guest page lists are copied into host memory once, when the object that
 * owns them is created; translation afterwards only reads the host copy,
 * so a guest rewriting its list cannot change what an object maps.  All
 * guest memory goes through rnic_dma_read/write (pci_dma_*, refused while
 * the device is halted: rnic-pm.c), so a vIOMMU applies and a guest
 * address that lands on our own BARs is just another MMIO access.
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/bswap.h"
#include "qemu/rcu.h"
#include "exec/memory.h"
#include "rnic.h"
#include "rnic-cmd.h"
#include "trace.h"

static const char *const rnic_mem_err_names[] = {
    [RNIC_MEM_OK] = "ok",
    [RNIC_MEM_BAD_KEY] = "bad key",
    [RNIC_MEM_BAD_PD] = "wrong PD",
    [RNIC_MEM_NO_ACCESS] = "no access",
    [RNIC_MEM_BOUNDS] = "out of bounds",
    [RNIC_MEM_DMA] = "DMA error",
};

const char *rnic_mem_err_str(RnicMemErr err)
{
    if ((unsigned)err >= ARRAY_SIZE(rnic_mem_err_names)) {
        return "unknown";
    }
    return rnic_mem_err_names[err];
}

/*
 * Everything a guest can make the host allocate for its objects (page
 * lists, QP state) is charged against the max-host-mem property, so that
 * no sequence of commands can pin more host memory than the owner of the
 * VM allowed.
 */
bool rnic_host_mem_charge(RnicState *s, uint64_t bytes)
{
    if (bytes > s->prop.max_host_mem ||
        s->host_mem_used > s->prop.max_host_mem - bytes) {
        trace_rnic_err_host_mem(bytes, s->host_mem_used,
                                s->prop.max_host_mem);
        return false;
    }
    s->host_mem_used += bytes;
    return true;
}

void rnic_host_mem_uncharge(RnicState *s, uint64_t bytes)
{
    s->host_mem_used -= MIN(bytes, s->host_mem_used);
}

/* A page array of 'n' entries, charged to the device's host memory. */
static uint64_t *rnic_pbl_alloc(RnicState *s, uint32_t n)
{
    uint64_t *pages;

    if (!rnic_host_mem_charge(s, (uint64_t)n * sizeof(uint64_t))) {
        return NULL;
    }
    pages = g_try_new0(uint64_t, n);
    if (!pages) {
        rnic_host_mem_uncharge(s, (uint64_t)n * sizeof(uint64_t));
    }
    return pages;
}

bool rnic_pbl_alloc_empty(RnicState *s, uint32_t cap, uint8_t page_shift,
                          RnicPbl *out)
{
    memset(out, 0, sizeof(*out));
    out->pages = rnic_pbl_alloc(s, cap);
    if (!out->pages) {
        return false;
    }
    out->cap = cap;
    out->page_shift = page_shift;
    return true;
}

void rnic_pbl_free(RnicState *s, RnicPbl *pbl)
{
    if (pbl->pages) {
        rnic_host_mem_uncharge(s, (uint64_t)pbl->cap * sizeof(uint64_t));
    }
    g_free(pbl->pages);
    pbl->pages = NULL;
    pbl->npages = 0;
    pbl->cap = 0;
}

/* Reads 'n' LE64 page addresses into 'out', checking their alignment. */
static uint8_t rnic_pbl_read_array(RnicState *s, uint64_t addr, uint32_t n,
                                   uint64_t align_mask, uint64_t *out)
{
    uint32_t i;

    if (rnic_dma_read(s, addr, out, (dma_addr_t)n * 8)
        != MEMTX_OK) {
        RNIC_GUEST_ERR(rnic_err_pbl("DMA error reading the list", addr), s,
                       "page list at 0x%" PRIx64 " not readable", addr);
        return RNIC_CMD_ERR_DMA;
    }
    for (i = 0; i < n; i++) {
        out[i] = le64_to_cpu(out[i]);
        if (out[i] & align_mask) {
            RNIC_GUEST_ERR(rnic_err_pbl("unaligned page address", out[i]), s,
                           "page address 0x%" PRIx64 " not aligned", out[i]);
            return RNIC_CMD_ERR_PARAM;
        }
        /* The last byte of the page must not wrap the address space. */
        if (out[i] > UINT64_MAX - align_mask) {
            RNIC_GUEST_ERR(rnic_err_pbl("page wraps the address space", out[i]),
                           s,
                           "page 0x%" PRIx64 " wraps", out[i]);
            return RNIC_CMD_ERR_PARAM;
        }
    }
    return RNIC_CMD_OK;
}

uint8_t rnic_pbl_load(RnicState *s, const struct rnic_pbl *desc,
                      uint32_t max_pages, RnicPbl *out)
{
    uint64_t addr = le64_to_cpu(desc->addr);
    uint32_t npages = le32_to_cpu(desc->npages);
    uint8_t shift = desc->page_shift;
    uint64_t pgmask;
    uint64_t *pages;
    uint8_t st = RNIC_CMD_OK;
    uint32_t i;

    memset(out, 0, sizeof(*out));
    trace_rnic_pbl_load(addr, npages, shift, desc->levels);

    if (desc->rsvd_14) {
        RNIC_GUEST_ERR(rnic_err_pbl("reserved field set", desc->rsvd_14), s,
                       "page list reserved field set");
        return RNIC_CMD_ERR_PARAM;
    }
    if (shift < RNIC_PBL_MIN_SHIFT || shift > RNIC_PBL_MAX_SHIFT) {
        RNIC_GUEST_ERR(rnic_err_pbl("page_shift out of range", shift), s,
                       "page_shift %u out of range", shift);
        return RNIC_CMD_ERR_PARAM;
    }
    if (npages == 0 || npages > max_pages) {
        RNIC_GUEST_ERR(rnic_err_pbl("npages out of range", npages), s,
                       "page list of %u pages (cap %u)", npages, max_pages);
        return RNIC_CMD_ERR_PARAM;
    }
    if (desc->levels > RNIC_PBL_MAX_LEVELS) {
        RNIC_GUEST_ERR(rnic_err_pbl("levels out of range", desc->levels), s,
                       "page list with %u levels", desc->levels);
        return RNIC_CMD_ERR_PARAM;
    }
    pgmask = (1ULL << shift) - 1;

    pages = rnic_pbl_alloc(s, npages);
    if (!pages) {
        RNIC_GUEST_ERR(rnic_err_pbl("host memory for the list refused", npages),
                       s,
                       "page list of %u pages exceeds max-host-mem", npages);
        return RNIC_CMD_ERR_RESOURCE;
    }
    /* Reading and checking the list is work the bottom half accounts. */
    s->cmd_cost += npages / RNIC_PBL_ENTRIES_PER_PAGE;

    switch (desc->levels) {
    case 0:
        /* Contiguous: every page must be addressable without wrapping. */
        if ((addr & pgmask) ||
            addr > UINT64_MAX - (((uint64_t)npages << shift) - 1)) {
            RNIC_GUEST_ERR(rnic_err_pbl("bad contiguous base", addr), s,
                           "contiguous pages at 0x%" PRIx64 " invalid", addr);
            st = RNIC_CMD_ERR_PARAM;
            break;
        }
        for (i = 0; i < npages; i++) {
            pages[i] = addr + ((uint64_t)i << shift);
        }
        break;
    case 1:
        if (addr & 7) {
            RNIC_GUEST_ERR(rnic_err_pbl("unaligned list address", addr), s,
                           "page list at 0x%" PRIx64 " not aligned", addr);
            st = RNIC_CMD_ERR_PARAM;
            break;
        }
        st = rnic_pbl_read_array(s, addr, npages, pgmask, pages);
        break;
    case 2: {
        uint32_t ndir = DIV_ROUND_UP(npages, RNIC_PBL_ENTRIES_PER_PAGE);
        uint64_t *dir;

        if (addr & 7) {
            RNIC_GUEST_ERR(rnic_err_pbl("unaligned directory address", addr), s,
                           "page directory at 0x%" PRIx64 " not aligned", addr);
            st = RNIC_CMD_ERR_PARAM;
            break;
        }
        dir = g_try_new(uint64_t, ndir);
        if (!dir) {
            st = RNIC_CMD_ERR_RESOURCE;
            break;
        }
        /* Second-level pages are 4 KiB whatever the MR page size is. */
        st = rnic_pbl_read_array(s, addr, ndir, 0xfff, dir);
        for (i = 0; st == RNIC_CMD_OK && i < ndir; i++) {
            uint32_t first = i * RNIC_PBL_ENTRIES_PER_PAGE;
            uint32_t n = MIN(npages - first, RNIC_PBL_ENTRIES_PER_PAGE);

            st = rnic_pbl_read_array(s, dir[i], n, pgmask, pages + first);
        }
        g_free(dir);
        break;
    }
    }

    if (st != RNIC_CMD_OK) {
        g_free(pages);
        rnic_host_mem_uncharge(s, (uint64_t)npages * sizeof(uint64_t));
        return st;
    }
    out->pages = pages;
    out->npages = npages;
    out->cap = npages;
    out->page_shift = shift;
    return RNIC_CMD_OK;
}

bool rnic_pbl_addr(const RnicPbl *pbl, uint64_t off, uint64_t *addr,
                   uint64_t *contig)
{
    uint64_t page = off >> pbl->page_shift;
    uint64_t in_page = off & ((1ULL << pbl->page_shift) - 1);

    if (!pbl->pages || page >= pbl->npages) {
        return false;
    }
    *addr = pbl->pages[page] + in_page;
    if (contig) {
        *contig = (1ULL << pbl->page_shift) - in_page;
    }
    return true;
}

/*
 * Every guest physical address is a valid ring address, 0 included, so
 * success is reported apart from the address.
 */
bool rnic_ring_entry(const RnicRing *ring, uint32_t idx, uint64_t *addr)
{
    uint64_t off = ((uint64_t)ring->first_page << 12) +
                   (uint64_t)(idx & ((1u << ring->log_size) - 1)) *
                   ring->stride;

    /* Creation checked that the list covers the ring. */
    return rnic_pbl_addr(&ring->pbl, off, addr, NULL);
}

bool rnic_ring_read(RnicState *s, const RnicRing *ring, uint32_t idx,
                    void *buf, size_t len)
{
    uint64_t addr;

    if (!rnic_ring_entry(ring, idx, &addr) || len > ring->stride) {
        return false;
    }
    return rnic_dma_read(s, addr, buf, len) == MEMTX_OK;
}

bool rnic_ring_write(RnicState *s, const RnicRing *ring, uint32_t idx,
                     size_t off, const void *buf, size_t len)
{
    uint64_t addr;

    if (!rnic_ring_entry(ring, idx, &addr) || off > ring->stride ||
        len > ring->stride - off) {
        return false;
    }
    return rnic_dma_write(s, addr + off, buf, len) == MEMTX_OK;
}

RnicMemErr rnic_mr_check(RnicState *s, uint32_t key, uint32_t pdn,
                         uint32_t access, uint64_t va, uint64_t len,
                         RnicMR **out)
{
    uint32_t idx = key >> 8;
    RnicMR *mr;
    RnicMemErr err = RNIC_MEM_OK;

    if (out) {
        *out = NULL;
    }
    if (idx == 0 || idx > s->prop.max_mr) {
        err = RNIC_MEM_BAD_KEY;
        goto fail;
    }
    mr = &s->mr[idx];
    if (!mr->valid || mr->key != (key & 0xff) ||
        ((mr->flags & RNIC_MR_FLAG_FAST_REG) && !mr->fr_valid)) {
        err = RNIC_MEM_BAD_KEY;
        goto fail;
    }
    if (mr->pdn != pdn) {
        err = RNIC_MEM_BAD_PD;
        goto fail;
    }
    if (access & ~mr->access) {
        err = RNIC_MEM_NO_ACCESS;
        goto fail;
    }
    /* [va, va + len) inside [iova, iova + length), without wrapping. */
    if (len && (va < mr->iova || va - mr->iova > mr->length ||
                len > mr->length - (va - mr->iova))) {
        err = RNIC_MEM_BOUNDS;
        goto fail;
    }
    if (out) {
        *out = mr;
    }
    return RNIC_MEM_OK;

fail:
    trace_rnic_mr_check_fail(key, pdn, access, va, len,
                             rnic_mem_err_str(err));
    return err;
}

/* The fast-reg MR of 'pdn' that 'key' names, or NULL. */
static RnicMR *rnic_fr_mr(RnicState *s, uint32_t pdn, uint32_t key)
{
    uint32_t idx = key >> 8;
    RnicMR *mr;

    if (idx == 0 || idx > s->prop.max_mr) {
        return NULL;
    }
    mr = &s->mr[idx];
    if (!mr->valid || !(mr->flags & RNIC_MR_FLAG_FAST_REG) ||
        mr->pdn != pdn) {
        return NULL;
    }
    return mr;
}

bool rnic_mr_fast_reg(RnicState *s, uint32_t pdn, const RnicFastReg *fr)
{
    RnicMR *mr = rnic_fr_mr(s, pdn, fr->key);
    uint64_t pgmask = 0, span;
    const char *why = NULL;

    if (!mr) {
        why = "no such fast-reg MR in this PD";
    } else if (mr->fr_valid) {
        why = "MR still registered (invalidate it first)";
    } else if (fr->access & ~RNIC_ACCESS_ALL ||
               ((fr->access & (RNIC_ACCESS_REMOTE_WRITE |
                               RNIC_ACCESS_REMOTE_ATOMIC)) &&
                !(fr->access & RNIC_ACCESS_LOCAL_WRITE))) {
        why = "bad access flags";
    } else if (fr->page_shift < RNIC_PBL_MIN_SHIFT ||
               fr->page_shift > RNIC_PBL_MAX_SHIFT) {
        why = "page_shift out of range";
    } else if (!fr->npages || fr->npages > mr->pbl.cap) {
        why = "npages above the MR's max_pages";
    } else if (!fr->length || fr->iova > UINT64_MAX - (fr->length - 1)) {
        why = "bad iova + length";
    }
    if (!why) {
        pgmask = (1ULL << fr->page_shift) - 1;
        span = (fr->iova & pgmask) + fr->length;
        if (span < fr->length ||
            (span - 1) >> fr->page_shift >= fr->npages) {
            why = "pages do not cover the length";
        }
    }
    if (!why && fr->list & 7) {
        why = "page list not 8-byte aligned";
    }
    if (!why && rnic_pbl_read_array(s, fr->list, fr->npages, pgmask,
                                    mr->pbl.pages) != RNIC_CMD_OK) {
        why = "page list unreadable or unaligned";
    }
    if (why) {
        RNIC_GUEST_ERR(rnic_mr_fr_fail(fr->key, why), s,
                       "REG_MR WQE for key 0x%x: %s", fr->key, why);
        return false;
    }
    mr->key = fr->key & 0xff;
    mr->access = fr->access;
    mr->iova = fr->iova;
    mr->length = fr->length;
    mr->pbl.npages = fr->npages;
    mr->pbl.page_shift = fr->page_shift;
    mr->fr_valid = true;
    trace_rnic_mr_fr_reg(fr->key, fr->access, fr->iova, fr->length,
                         fr->npages, fr->page_shift);
    return true;
}

/* ---- memory windows ---- */

RnicMW *rnic_mw_of_key(RnicState *s, uint32_t key)
{
    uint32_t idx = (key & ~RNIC_MW_KEY_FLAG) >> 8;

    if (!(key & RNIC_MW_KEY_FLAG) || idx == 0 || idx > s->prop.max_mw ||
        !s->mw[idx].valid) {
        return NULL;
    }
    return &s->mw[idx];
}

void rnic_mw_unbind(RnicState *s, RnicMW *mw)
{
    if (mw->bound && mw->mr <= s->prop.max_mr && s->mr[mw->mr].mw_refs) {
        s->mr[mw->mr].mw_refs--;
    }
    mw->bound = false;
}

void rnic_mw_unbind_qp(RnicState *s, uint32_t qpn)
{
    uint32_t i;

    for (i = 1; i <= s->prop.max_mw; i++) {
        if (s->mw[i].valid && s->mw[i].type == 2 && s->mw[i].qpn == qpn) {
            rnic_mw_unbind(s, &s->mw[i]);
        }
    }
}

/*
 * A bound window is only as good as its MR: still valid, still
 * registered (a fast-reg MR between LOCAL_INV and REG_MR is not), and
 * still covering the window's range, checked again at every use.
 */
static bool rnic_mw_mr_ok(RnicState *s, const RnicMW *mw)
{
    const RnicMR *mr;

    if (mw->mr == 0 || mw->mr > s->prop.max_mr) {
        return false;
    }
    mr = &s->mr[mw->mr];
    if (!mr->valid || mr->pdn != mw->pdn ||
        ((mr->flags & RNIC_MR_FLAG_FAST_REG) && !mr->fr_valid)) {
        return false;
    }
    return mw->va >= mr->iova && mw->va - mr->iova <= mr->length &&
           mw->length <= mr->length - (mw->va - mr->iova);
}

RnicMemErr rnic_rkey_check(RnicState *s, uint32_t rkey, uint32_t pdn,
                           uint32_t qpn, uint32_t access, uint64_t va,
                           uint64_t len, RnicMR **out)
{
    RnicMW *mw;
    RnicMemErr err = RNIC_MEM_OK;

    if (!(rkey & RNIC_MW_KEY_FLAG)) {
        return rnic_mr_check(s, rkey, pdn, access, va, len, out);
    }
    if (out) {
        *out = NULL;
    }
    mw = rnic_mw_of_key(s, rkey);
    if (!mw || !mw->bound || mw->key != (rkey & 0xff) ||
        !rnic_mw_mr_ok(s, mw)) {
        err = RNIC_MEM_BAD_KEY;
    } else if (mw->pdn != pdn || (mw->type == 2 && mw->qpn != qpn)) {
        err = RNIC_MEM_BAD_PD;
    } else if (access & ~mw->access) {
        err = RNIC_MEM_NO_ACCESS;
    } else if (len && (va < mw->va || va - mw->va > mw->length ||
                       len > mw->length - (va - mw->va))) {
        err = RNIC_MEM_BOUNDS;
    }
    if (err) {
        trace_rnic_mr_check_fail(rkey, pdn, access, va, len,
                                 rnic_mem_err_str(err));
        return err;
    }
    if (out) {
        *out = &s->mr[mw->mr];
    }
    return RNIC_MEM_OK;
}

#define RNIC_MW_ACCESS  (RNIC_ACCESS_REMOTE_READ | RNIC_ACCESS_REMOTE_WRITE | \
                         RNIC_ACCESS_REMOTE_ATOMIC)

const char *rnic_mw_bind(RnicState *s, uint32_t pdn, uint32_t qpn,
                         const RnicMwBind *b)
{
    RnicMW *mw = rnic_mw_of_key(s, b->rkey);
    RnicMR *mr;

    if (!mw) {
        return "no such window";
    }
    if (mw->pdn != pdn) {
        return "window of another PD";
    }
    if (mw->type == 2 && mw->bound) {
        return "type 2 window still bound (invalidate it first)";
    }
    if (b->access & ~RNIC_MW_ACCESS) {
        return "bad access flags";
    }
    if (mw->type == 1 && !b->length) {
        /* A zero-length bind of a type 1 window unbinds it. */
        rnic_mw_unbind(s, mw);
        mw->key = b->rkey & 0xff;
        trace_rnic_mw_bind(b->rkey, 0, 0, 0, 0);
        return NULL;
    }
    if (rnic_mr_check(s, b->lkey, pdn, RNIC_ACCESS_MW_BIND, b->va, b->length,
                      &mr)) {
        return "MR refuses: no such MR, another PD, no MW_BIND, or range";
    }
    if ((b->access & (RNIC_ACCESS_REMOTE_WRITE | RNIC_ACCESS_REMOTE_ATOMIC)) &&
        !(mr->access & RNIC_ACCESS_LOCAL_WRITE)) {
        return "remote write or atomic on an MR without local write";
    }
    rnic_mw_unbind(s, mw);
    mw->bound = true;
    mw->key = b->rkey & 0xff;
    mw->mr = mr - s->mr;
    mw->qpn = qpn;
    mw->access = b->access;
    mw->va = b->va;
    mw->length = b->length;
    mr->mw_refs++;
    trace_rnic_mw_bind(b->rkey, b->lkey, b->access, b->va, b->length);
    return NULL;
}

bool rnic_key_invalidate(RnicState *s, uint32_t pdn, uint32_t qpn,
                         uint32_t key)
{
    const char *why = NULL;
    RnicMR *mr;
    RnicMW *mw;

    if (key & RNIC_MW_KEY_FLAG) {
        mw = rnic_mw_of_key(s, key);
        if (!mw || mw->pdn != pdn || mw->key != (key & 0xff)) {
            why = "no such window";
        } else if (mw->type != 2) {
            why = "type 1 windows are not invalidated";
        } else if (!mw->bound) {
            why = "window not bound";
        } else if (qpn && mw->qpn != qpn) {
            why = "window bound through another QP";
        } else {
            rnic_mw_unbind(s, mw);
        }
    } else {
        mr = rnic_fr_mr(s, pdn, key);
        if (!mr || mr->key != (key & 0xff)) {
            why = "no such fast-reg MR";
        } else if (qpn && !(mr->access & (RNIC_ACCESS_REMOTE_READ |
                                          RNIC_ACCESS_REMOTE_WRITE |
                                          RNIC_ACCESS_REMOTE_ATOMIC))) {
            /*
             * A peer may end only a registration it was given remote
             * rights to, as with rxe, where such an MR has no R_Key.
             */
            why = "MR has no remote access rights";
        } else if (mr->mw_refs) {
            /* As rxe does: its windows would outlive the registration. */
            why = "MR has bound memory windows";
        } else {
            mr->fr_valid = false;
        }
    }
    if (why) {
        trace_rnic_mr_fr_fail(key, why);
        return false;
    }
    trace_rnic_mr_fr_inv(key);
    return true;
}

RnicMemErr rnic_mr_copy(RnicState *s, RnicMR *mr, uint64_t va, void *buf,
                        uint64_t len, bool to_guest)
{
    uint8_t *p = buf;
    uint64_t off;

    if (!len) {
        return RNIC_MEM_OK;
    }
    if (mr->flags & RNIC_MR_FLAG_PHYS) {
        MemTxResult r = to_guest ?
            rnic_dma_write(s, va, buf, len) :
            rnic_dma_read(s, va, buf, len);
        return r == MEMTX_OK ? RNIC_MEM_OK : RNIC_MEM_DMA;
    }

    /* rnic_mr_check() bounded va and len, so none of this wraps. */
    off = (va - mr->iova) + (mr->iova & ((1ULL << mr->pbl.page_shift) - 1));
    while (len) {
        uint64_t addr, contig, n;
        MemTxResult r;

        if (!rnic_pbl_addr(&mr->pbl, off, &addr, &contig)) {
            return RNIC_MEM_BOUNDS;
        }
        n = MIN(len, contig);
        r = to_guest ? rnic_dma_write(s, addr, p, n) :
                       rnic_dma_read(s, addr, p, n);
        if (r != MEMTX_OK) {
            trace_rnic_err_dma(addr, n);
            return RNIC_MEM_DMA;
        }
        p += n;
        off += n;
        len -= n;
    }
    return RNIC_MEM_OK;
}

/*
 * Makes guest memory behind one DMA range durable: file-backed or pmem
 * guest RAM is synced to its backing store, anonymous RAM has none, and a
 * range that is not RAM is refused.  Goes through the device's DMA
 * address space, so a vIOMMU mapping is honoured.
 */
static bool rnic_dma_persist(RnicState *s, dma_addr_t addr, uint64_t len)
{
    AddressSpace *as = pci_get_address_space(PCI_DEVICE(s));

    RCU_READ_LOCK_GUARD();
    while (len) {
        hwaddr xlat, plen = len;
        MemoryRegion *mr = address_space_translate(as, addr, &xlat, &plen,
                                                   true,
                                                   MEMTXATTRS_UNSPECIFIED);

        if (!memory_region_is_ram(mr) || memory_region_is_ram_device(mr) ||
            !plen) {
            trace_rnic_err_dma(addr, len);
            return false;
        }
        memory_region_msync(mr, xlat, plen);
        addr += plen;
        len -= plen;
    }
    return true;
}

RnicMemErr rnic_mr_persist(RnicState *s, RnicMR *mr, uint64_t va,
                           uint64_t len)
{
    uint64_t off;

    if (mr->flags & RNIC_MR_FLAG_PHYS) {
        return len && !rnic_dma_persist(s, va, len) ? RNIC_MEM_DMA :
                                                      RNIC_MEM_OK;
    }
    /* The caller bounded va and len by the MR, as for rnic_mr_copy(). */
    off = (va - mr->iova) + (mr->iova & ((1ULL << mr->pbl.page_shift) - 1));
    while (len) {
        uint64_t addr, contig, n;

        if (!rnic_pbl_addr(&mr->pbl, off, &addr, &contig)) {
            return RNIC_MEM_BOUNDS;
        }
        n = MIN(len, contig);
        if (!rnic_dma_persist(s, addr, n)) {
            return RNIC_MEM_DMA;
        }
        off += n;
        len -= n;
    }
    return RNIC_MEM_OK;
}

RnicMemErr rnic_sgl_copy(RnicState *s, uint32_t pdn, uint32_t access,
                         const RnicSge *sge, unsigned nsge, uint64_t off,
                         void *buf, uint64_t len, bool to_guest)
{
    uint8_t *p = buf;
    unsigned i;

    for (i = 0; i < nsge && len; i++) {
        uint64_t n, va;
        RnicMR *mr;
        RnicMemErr err;

        if (off >= sge[i].length) {
            off -= sge[i].length;
            continue;
        }
        n = MIN(len, sge[i].length - off);
        if (sge[i].addr > UINT64_MAX - off) {
            return RNIC_MEM_BOUNDS;
        }
        va = sge[i].addr + off;
        err = rnic_mr_check(s, sge[i].lkey, pdn, access, va, n, &mr);
        if (err != RNIC_MEM_OK) {
            return err;
        }
        err = rnic_mr_copy(s, mr, va, p, n, to_guest);
        if (err != RNIC_MEM_OK) {
            return err;
        }
        p += n;
        len -= n;
        off = 0;
    }
    /* The list ended before 'len' bytes: the caller's length check failed. */
    return len ? RNIC_MEM_BOUNDS : RNIC_MEM_OK;
}
