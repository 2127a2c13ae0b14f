# SPDX-License-Identifier: GPL-2.0-or-later
#
# Upstream sources, fetched only through apt from Debian's archive, kept as
# small git repositories under .cache/src so that our patches apply with
# 'git am' and can be re-applied from a clean baseline at any time.

SRC=$CACHE/src
QEMU_SRC=$SRC/qemu
RDMA_SRC=$SRC/rdma-core
QEMU_SUITE=trixie
QEMU_VERSION_GLOB='10.0.*'
RDMA_VERSION=56.1

# make_baseline DIR: turn an unpacked tree into a git repo with one commit
# tagged rnic-baseline.
make_baseline() {
    local dir=$1
    rm -rf "$dir/.git"
    git_local -C "$dir" init -q
    git_local -C "$dir" add -A -f .
    git_local -C "$dir" commit -q -m "baseline: $(basename "$dir") as unpacked from Debian"
    git_local -C "$dir" tag -f rnic-baseline >/dev/null
}

step_fetch_qemu() {
    local dl=$SRC/dl-qemu
    rm -rf "$dl" "$QEMU_SRC"
    mkdir -p "$dl"
    cd "$dl"
    timeout 1200 apt-get source "qemu/$QEMU_SUITE"
    local dir
    dir=$(find . -mindepth 1 -maxdepth 1 -type d -name 'qemu-*' | head -n1)
    [ -n "$dir" ] || { echo "apt-get source produced no qemu-* directory"; return 1; }
    local ver
    ver=$(cat "$dir/VERSION")
    echo "QEMU version: $ver"
    # shellcheck disable=SC2254
    case $ver in
        $QEMU_VERSION_GLOB) ;;
        *) echo "expected QEMU $QEMU_VERSION_GLOB from $QEMU_SUITE, got $ver"; return 1 ;;
    esac
    mv "$dir" "$QEMU_SRC"
    rm -rf "$dl"
    make_baseline "$QEMU_SRC"
}

step_fetch_rdma_core() {
    local dl=$SRC/dl-rdma-core
    rm -rf "$dl" "$RDMA_SRC"
    mkdir -p "$dl"
    cd "$dl"
    # The .dsc is not always served, so only the tarballs are fetched.
    timeout 1200 apt-get source --download-only --tar-only "rdma-core/$QEMU_SUITE"
    local tarball
    tarball=$(ls rdma-core_"$RDMA_VERSION".orig.tar.* 2>/dev/null | head -n1)
    [ -n "$tarball" ] || { echo "no rdma-core $RDMA_VERSION orig tarball downloaded:"; ls -l; return 1; }
    mkdir unpack
    tar -xf "$tarball" -C unpack
    local dir
    dir=$(find unpack -mindepth 1 -maxdepth 1 -type d | head -n1)
    [ -f "$dir/CMakeLists.txt" ] || { echo "unexpected tarball layout"; return 1; }
    mv "$dir" "$RDMA_SRC"
    rm -rf "$dl"
    make_baseline "$RDMA_SRC"
}

# apply_patches TREE PATCHDIR: make TREE the baseline plus every
# PATCHDIR/*.patch, applied in order with 'git am'.  The patches are applied
# in a scratch worktree first and TREE is then switched to the result, so
# files whose content does not change keep their timestamps (and the
# incremental build stays incremental); a patch that does not apply leaves
# TREE as it was.
apply_patches() {
    local tree=$1 pdir=$2
    local wt=$tree.patching
    local patches=()
    if [ -d "$pdir" ]; then
        mapfile -t patches < <(find "$pdir" -maxdepth 1 -type f -name '*.patch' | LC_ALL=C sort)
    fi
    git_local -C "$tree" am --abort >/dev/null 2>&1 || true
    git_local -C "$tree" worktree remove --force "$wt" >/dev/null 2>&1 || true
    rm -rf "$wt"
    git_local -C "$tree" worktree prune
    git_local -C "$tree" worktree add -q --detach "$wt" rnic-baseline
    if [ "${#patches[@]}" -eq 0 ]; then
        echo "no patches in $(rel "$pdir")"
    else
        echo "applying ${#patches[@]} patch(es) from $(rel "$pdir")"
        if ! git_local -C "$wt" am --3way --keep-cr "${patches[@]}"; then
            git_local -C "$wt" am --abort || true
            git_local -C "$tree" worktree remove --force "$wt" || true
            echo "a patch from $(rel "$pdir") does not apply (see above)"
            return 1
        fi
    fi
    local new
    new=$(git -C "$wt" rev-parse HEAD)
    git_local -C "$tree" worktree remove --force "$wt"
    git_local -C "$tree" checkout -q -f -B main "$new"
    git_local -C "$tree" clean -q -fd
    git_local -C "$tree" log --oneline rnic-baseline..HEAD
}

# link_into TREE SRCPATH DESTPATH: symlink a repo path into an upstream tree.
link_into() {
    local tree=$1 src=$2 dest=$3
    mkdir -p "$(dirname "$tree/$dest")"
    rm -rf "${tree:?}/$dest"
    ln -s "$src" "$tree/$dest"
    echo "linked $dest -> $(rel "$src")"
}

# Remove symlinks into our repository that point at something that no longer
# exists (a file deleted or renamed in tests/qtest, say).
prune_dead_links() {
    local tree=$1 l
    find "$tree" -path "$tree/.git" -prune -o -type l -print | while read -r l; do
        case $(readlink "$l") in
            "$RNIC_ROOT"/*) [ -e "$l" ] || { rm -f "$l"; echo "removed stale link ${l#"$tree"/}"; } ;;
        esac
    done
}

step_patch_qemu() {
    local h
    h=$(hash_inputs "$RNIC_ROOT/patches/qemu")
    if ! stamp_ok qemu-patches "$h"; then
        stamp_clear qemu-patches
        apply_patches "$QEMU_SRC" "$RNIC_ROOT/patches/qemu"
        stamp_set qemu-patches "$h"
    else
        echo "patches unchanged"
    fi
    # Links are cheap and are always refreshed.
    if [ -d "$RNIC_ROOT/hw/rnic" ]; then
        [ "$(readlink "$QEMU_SRC/hw/rnic" 2>/dev/null)" = "$RNIC_ROOT/hw/rnic" ] ||
            link_into "$QEMU_SRC" "$RNIC_ROOT/hw/rnic" hw/rnic
    fi
    if [ -d "$RNIC_ROOT/tests/qtest" ]; then
        local f relp
        while IFS= read -r f; do
            relp=${f#"$RNIC_ROOT"/}
            [ -L "$QEMU_SRC/$relp" ] && [ "$(readlink "$QEMU_SRC/$relp")" = "$f" ] && continue
            link_into "$QEMU_SRC" "$f" "$relp"
        done < <(find "$RNIC_ROOT/tests/qtest" -type f | LC_ALL=C sort)
    fi
    prune_dead_links "$QEMU_SRC"
}

step_patch_rdma_core() {
    local h
    h=$(hash_inputs "$RNIC_ROOT/patches/rdma-core")
    if ! stamp_ok rdma-core-patches "$h"; then
        stamp_clear rdma-core-patches
        apply_patches "$RDMA_SRC" "$RNIC_ROOT/patches/rdma-core"
        stamp_set rdma-core-patches "$h"
    else
        echo "patches unchanged"
    fi
    if [ -d "$RNIC_ROOT/guest-driver/provider" ]; then
        [ "$(readlink "$RDMA_SRC/providers/rnic" 2>/dev/null)" = "$RNIC_ROOT/guest-driver/provider" ] ||
            link_into "$RDMA_SRC" "$RNIC_ROOT/guest-driver/provider" providers/rnic
    fi
    prune_dead_links "$RDMA_SRC"
}
