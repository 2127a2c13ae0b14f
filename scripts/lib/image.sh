# SPDX-License-Identifier: GPL-2.0-or-later
#
# The guest image: a Debian trixie root file system made with debootstrap,
# then our files (init, test helpers, kernel module, provider) on top, then
# an ext4 image made without loop devices (mkfs.ext4 -d).  The VMs boot the
# guest's own kernel with -kernel/-initrd and share the image read-only
# (-snapshot).
#
# Two layers, each rebuilt only when its inputs change:
#   base:  debootstrap (package list, this file)           .cache/image/base
#   final: base + our files, as rootfs.img, vmlinuz, initrd .cache/image/

IMG=$CACHE/image
IMG_BASE=$IMG/base
IMG_WORK=$IMG/work
IMG_DEBS=$CACHE/debs
IMAGE_FILE=$IMG/rootfs.img
IMAGE_KERNEL=$IMG/vmlinuz
IMAGE_INITRD=$IMG/initrd.img
IMAGE_SIZE=${RNIC_IMAGE_SIZE:-3G}
GUEST_SUITE=trixie
GUEST_MIRROR=${RNIC_GUEST_MIRROR:-http://deb.debian.org/debian}
PACKAGES_FILE=$RNIC_ROOT/scripts/image-packages.txt
# Bump to force a new base when the recipe below changes.
IMAGE_BASE_RECIPE=3

image_packages() {
    sed -e 's/#.*//' "$PACKAGES_FILE" | tr -s ' \t\n' '\n' | sed '/^$/d' | LC_ALL=C sort -u
}

# Kernel release installed in a root file system.
guest_kernel_release() {
    local root=$1
    find "$root/lib/modules" -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | LC_ALL=C sort -V | tail -n1
}

# Mount what package scripts and dkms expect inside the chroot; undone by
# chroot_unmount (also called from an EXIT trap, so a failure cleans up).
chroot_mount() {
    local r=$1
    mountpoint -q "$r/proc" || mount -t proc proc "$r/proc"
    mountpoint -q "$r/sys" || mount -t sysfs sysfs "$r/sys"
    mountpoint -q "$r/dev" || mount --bind /dev "$r/dev"
}

chroot_unmount() {
    local r=$1 m
    # Innermost first.
    for m in $(awk -v r="$r/" 'index($2, r) == 1 { print $2 }' /proc/mounts | sort -r); do
        umount "$m" 2>/dev/null || umount -l "$m"
    done
}

# guest_boot_setup ROOT: what a root file system made by debootstrap
# needs to boot in the test VMs.
guest_boot_setup() {
    local r=$1
    # Small initrd that can mount ext4 from virtio-blk: a fixed module list
    # (MODULES=dep cannot see the VM's hardware from a chroot).
    cat >"$r/etc/initramfs-tools/conf.d/rnic.conf" <<'CONF'
MODULES=list
CONF
    cat >"$r/etc/initramfs-tools/modules" <<'MODS'
virtio_pci
virtio_blk
ext4
crc32c_generic
MODS
    chroot "$r" update-initramfs -u -k all
    echo 'rnic' >"$r/etc/hostname"
    printf '127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n' >"$r/etc/hosts"
    printf '/dev/vda / ext4 rw,relatime 0 1\n' >"$r/etc/fstab"
    # No password for root: these VMs only ever run our test commands.
    chroot "$r" passwd -d root >/dev/null
}

# install_guest_helpers ROOT: our init and the guest helpers the VM tests
# use, in /sbin and /opt/rnic/bin.
install_guest_helpers() {
    local r=$1 f
    install -D -m 0755 "$RNIC_ROOT/scripts/guest/rnic-init" "$r/sbin/rnic-init"
    mkdir -p "$r/opt/rnic/bin"
    for f in "$RNIC_ROOT"/scripts/guest/*; do
        [ -f "$f" ] || continue
        case $f in
            *.txt) install -m 0644 "$f" "$r/opt/rnic/bin/" ;;
            *) install -m 0755 "$f" "$r/opt/rnic/bin/" ;;
        esac
    done
    ln -sfn /opt/rnic/bin "$r/opt/rnic/sbin"
}

# make_guest_files ROOT KVER DIR: DIR/rootfs.img, vmlinuz and initrd.img
# from ROOT, whose lean initrd is already made.
make_guest_files() {
    local r=$1 kver=$2 d=$3
    rm -f "$d/rootfs.img.tmp"
    timeout 1800 mkfs.ext4 -q -F -L rnic-root -E lazy_itable_init=1 -d "$r" "$d/rootfs.img.tmp" "$IMAGE_SIZE"
    cp "$r/boot/vmlinuz-$kver" "$d/vmlinuz.tmp"
    cp "$r/boot/initrd-lean.img-$kver" "$d/initrd.img.tmp"
    mv "$d/rootfs.img.tmp" "$d/rootfs.img"
    mv "$d/vmlinuz.tmp" "$d/vmlinuz"
    mv "$d/initrd.img.tmp" "$d/initrd.img"
}

base_hash() {
    hash_inputs "$PACKAGES_FILE" "str:$GUEST_SUITE $IMAGE_BASE_RECIPE"
}

step_image_base() {
    local h
    h=$(base_hash)
    if stamp_ok image-base "$h" && [ -d "$IMG_BASE/lib/modules" ]; then
        echo "base root file system unchanged"
        return 0
    fi
    stamp_clear image-base
    chroot_unmount "$IMG_BASE.tmp"
    rm -rf "$IMG_BASE" "$IMG_BASE.tmp"
    mkdir -p "$IMG" "$IMG_DEBS"
    local include
    include=$(image_packages | paste -sd, -)
    echo "packages: $include"
    timeout 3600 debootstrap --variant=minbase --merged-usr --components=main \
        --cache-dir="$IMG_DEBS" --include="$include" \
        "$GUEST_SUITE" "$IMG_BASE.tmp" "$GUEST_MIRROR"

    local r=$IMG_BASE.tmp
    # debootstrap may leave its /proc mounted; take over from here.
    trap 'chroot_unmount "$IMG_BASE.tmp"' EXIT
    chroot_unmount "$r"
    chroot_mount "$r"
    guest_boot_setup "$r"
    chroot "$r" apt-get clean
    rm -rf "$r/var/lib/apt/lists/"* "$r/var/cache/apt/"*.bin
    chroot_unmount "$r"
    trap - EXIT
    mv "$r" "$IMG_BASE"
    stamp_set image-base "$h"
    du -sh "$IMG_BASE"
}

final_hash() {
    local prov
    prov=$(provider_outputs)
    # shellcheck disable=SC2086
    hash_inputs "str:$(cat "$STAMPS/image-base" 2>/dev/null)" \
        "$RNIC_ROOT/scripts/guest" "$RNIC_ROOT/scripts/lib/image.sh" \
        "$RNIC_ROOT/scripts/lib/packages.sh" "$RNIC_ROOT/guest-driver" $prov \
        "$RNIC_ROOT/tests/vfio" \
        "str:$IMAGE_SIZE" "str:kmod=${RNIC_NO_KMOD:-yes}"
}

# The driver and the provider go into the image the way users get them:
# the .debs of 'rnic.sh packages' (scripts/lib/packages.sh), installed with
# apt, whose rnic-dkms has dkms build the module for the image's kernel.
# Every VM test then runs on what the packages install.
install_guest_packages() {
    # The .debs stay in the image, for the test that removes and installs
    # them again as users do (tests/vm/rnic-packages.sh).
    local r=$1 out=$1/opt/rnic/debs
    rm -rf "$out"
    mkdir -p "$out"
    (do_packages --suite "$QEMU_SUITE" --out "$out")
    local debs=("$out"/ibverbs-provider-rnic_*.deb)
    if [ -n "${RNIC_NO_KMOD:-}" ]; then
        echo "RNIC_NO_KMOD is set: the image gets no kernel module"
    else
        debs+=("$out"/rnic-dkms_*.deb)
    fi
    # Drop what an earlier build of this work copy installed.
    chroot "$r" dpkg --purge rnic-dkms ibverbs-provider-rnic >/dev/null 2>&1 || true
    # The image keeps no package lists; everything the packages depend on
    # is in the base already, so apt needs none.
    chroot "$r" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
        --no-install-recommends "${debs[@]#"$r"}"
    local kver
    kver=$(guest_kernel_release "$r")
    if [ -z "${RNIC_NO_KMOD:-}" ] &&
       ! find "$r/lib/modules/$kver" -name 'rnic.ko*' | grep -q .; then
        cat "$r"/var/lib/dkms/rnic/*/build/make.log 2>/dev/null || true
        echo "rnic-dkms installed no module for $kver"
        return 1
    fi
}

# The VFIO driver written from the manual (tests/vfio) is compiled in the
# image by the image's own compiler, against the guest's kernel uAPI
# headers (linux/vfio.h), as a user would build it there.
build_vfio_driver() {
    local r=$1
    cp "$RNIC_ROOT/tests/vfio/rnic-vfio.c" "$r/tmp/rnic-vfio.c"
    mkdir -p "$r/opt/rnic/bin"
    chroot "$r" gcc -O2 -Wall -Wextra -Werror -o /opt/rnic/bin/rnic-vfio \
        /tmp/rnic-vfio.c
    rm -f "$r/tmp/rnic-vfio.c"
}

# stage_kmod_tree DEST: the kernel module source as dkms sees it, which is
# guest-driver/kernel as it is: the ABI headers it includes are copies kept
# there by scripts/sync-abi.sh.
stage_kmod_tree() {
    local dest=$1
    rm -rf "$dest"
    mkdir -p "$dest"
    cp -a "$RNIC_ROOT/guest-driver/kernel/." "$dest/"
}

# mpirun starts its ranks on the other VMs over ssh: host keys and a root
# key that every VM of the image trusts, made now, as a test image has no
# one to answer prompts (sshd itself is started by the tests that need it).
setup_guest_ssh() {
    local r=$1
    [ -x "$r/usr/sbin/sshd" ] || return 0
    rm -f "$r"/etc/ssh/ssh_host_*
    chroot "$r" ssh-keygen -A
    mkdir -p -m 0700 "$r/root/.ssh"
    rm -f "$r/root/.ssh/id_ed25519" "$r/root/.ssh/id_ed25519.pub"
    chroot "$r" ssh-keygen -q -t ed25519 -N '' -C rnic-test \
        -f /root/.ssh/id_ed25519
    cp "$r/root/.ssh/id_ed25519.pub" "$r/root/.ssh/authorized_keys"
    printf 'Host *\n    StrictHostKeyChecking no\n    UserKnownHostsFile /dev/null\n    LogLevel ERROR\n' \
        >"$r/root/.ssh/config"
    chmod 0600 "$r/root/.ssh/authorized_keys" "$r/root/.ssh/config"
}

step_image_final() {
    local h
    h=$(final_hash)
    if stamp_ok image-final "$h" && [ -f "$IMAGE_FILE" ] && [ -f "$IMAGE_KERNEL" ]; then
        echo "image unchanged"
        return 0
    fi
    stamp_clear image-final
    local r=$IMG_WORK
    chroot_unmount "$r"
    mkdir -p "$r"
    rsync -a -x --delete "$IMG_BASE/" "$r/"
    trap 'chroot_unmount "$IMG_WORK"' EXIT
    local kver
    kver=$(guest_kernel_release "$r")
    echo "guest kernel: $kver"

    install_guest_helpers "$r"

    chroot_mount "$r"
    install_guest_packages "$r"
    build_vfio_driver "$r"
    setup_guest_ssh "$r"
    lean_initrd "$r" "$kver"
    chroot_unmount "$r"
    trap - EXIT

    printf 'image built %s\nkernel %s\n' "$(date -u +%FT%TZ)" "$kver" >"$r/opt/rnic/IMAGE-INFO"
    make_guest_files "$r" "$kver" "$IMG"
    stamp_set image-final "$h"
    ls -ls "$IMAGE_FILE" "$IMAGE_KERNEL" "$IMAGE_INITRD"
}

# lean_initrd ROOT KVER: the initrd the VMs boot, in ROOT/boot.  Its only
# job is to load virtio-blk and ext4 and mount /dev/vda, and the kernel's
# devtmpfs makes /dev/vda without help.  Debian's initrd also carries udev
# (its 13 MB hardware database, and a coldplug of every device at each
# boot), device-mapper, iSCSI and resume support: three times the bytes to
# unpack and several seconds of every boot under TCG, for nothing these
# VMs use.  So the hooks that add them are left out; ROOT is the image's
# work copy, made afresh from the base at every build, so nothing of the
# base changes.
lean_initrd() {
    local r=$1 kver=$2 h=$1/usr/share/initramfs-tools
    rm -f "$h/hooks/udev" "$h/hooks/dmsetup" "$h/hooks/iscsi" "$h/hooks/resume" \
        "$h/hooks/thermal" "$h/scripts/init-top/udev" "$h/scripts/init-bottom/udev"
    chroot "$r" mkinitramfs -o "/boot/initrd-lean.img-$kver" "$kver"
}

# Compile check of the kernel module against Debian 12's own kernel headers
# on the host (a different, older kernel than the guest's).
step_kmod_host() {
    if [ ! -d "$RNIC_ROOT/guest-driver/kernel" ]; then
        echo "no guest-driver/kernel yet: nothing to build"
        return 0
    fi
    local kver out=$CACHE/kmod-host
    kver=$(ensure_host_kernel_headers)
    stage_kmod_tree "$out"
    echo "building against /usr/src/linux-headers-$kver"
    timeout 900 make -C "/usr/src/linux-headers-$kver" M="$out" modules
    ls -l "$out"/*.ko
}

# ---- Plain guests of other suites ('rnic.sh image --suite SUITE') --------
#
# A guest the project did not tailor: the suite's own kernel and rdma-core
# from debootstrap, then the two guest packages of 'rnic.sh packages --suite
# SUITE' installed with apt as the README tells users, which brings in
# dkms and the kernel headers from the suite's archive.  Our init and test
# helpers are added so that the launcher can run a test in it
# (--vm-guest I=DIR); nothing else.  Made in .cache/image-SUITE.

# The suite's own packages of a plain guest: a kernel, the RDMA
# userspace a user of the suite installs, and what our init and test
# helpers call.
PLAIN_PACKAGES="linux-image-amd64 initramfs-tools kmod procps util-linux
iproute2 iputils-ping coreutils findutils grep sed gawk
rdma-core ibverbs-utils ibverbs-providers rdmacm-utils perftest"
PLAIN_RECIPE=1

plain_dir() { echo "$CACHE/image-$1"; }

step_plain_base() {
    local suite=$1 d base h include
    d=$(plain_dir "$suite")
    base=$d/base
    h=$(hash_inputs "str:$suite $PLAIN_PACKAGES $PLAIN_RECIPE")
    if stamp_ok "image-base-$suite" "$h" && [ -d "$base/lib/modules" ]; then
        echo "$suite base root file system unchanged"
        return 0
    fi
    stamp_clear "image-base-$suite"
    chroot_unmount "$base.tmp"
    rm -rf "$base" "$base.tmp"
    mkdir -p "$d" "$CACHE/debs-$suite"
    # shellcheck disable=SC2086
    include=$(printf '%s\n' $PLAIN_PACKAGES | paste -sd, -)
    timeout 3600 debootstrap --variant=minbase --merged-usr --components=main \
        --cache-dir="$CACHE/debs-$suite" --include="$include" \
        "$suite" "$base.tmp" "$GUEST_MIRROR"
    local r=$base.tmp
    trap 'chroot_unmount "'"$r"'"' EXIT
    chroot_unmount "$r"
    chroot_mount "$r"
    guest_boot_setup "$r"
    chroot_unmount "$r"
    trap - EXIT
    mv "$r" "$base"
    stamp_set "image-base-$suite" "$h"
    du -sh "$base"
}

step_plain_final() {
    local suite=$1 d r h kver debs prov
    d=$(plain_dir "$suite")
    r=$d/work
    debs=$d/debs
    prov=$(provider_outputs)
    # shellcheck disable=SC2086
    h=$(hash_inputs "str:$(cat "$STAMPS/image-base-$suite" 2>/dev/null)" \
        "$RNIC_ROOT/scripts/guest" "$RNIC_ROOT/scripts/lib/image.sh" \
        "$RNIC_ROOT/scripts/lib/packages.sh" "$RNIC_ROOT/guest-driver" \
        $prov "str:$IMAGE_SIZE")
    if stamp_ok "image-final-$suite" "$h" && [ -f "$d/rootfs.img" ]; then
        echo "$suite image unchanged"
        return 0
    fi
    stamp_clear "image-final-$suite"
    rm -rf "$debs"
    (do_packages --suite "$suite" --out "$debs")
    chroot_unmount "$r"
    mkdir -p "$r"
    rsync -a -x --delete "$d/base/" "$r/"
    trap 'chroot_unmount "'"$r"'"' EXIT
    kver=$(guest_kernel_release "$r")
    echo "$suite guest kernel: $kver"
    install_guest_helpers "$r"
    chroot_mount "$r"
    # As a user does: the suite's archive, then 'apt install ./*.deb'.
    # The host's resolver, and a package cache kept between builds.
    cp /etc/resolv.conf "$r/etc/resolv.conf"
    mkdir -p "$CACHE/debs-$suite" "$r/var/cache/apt/archives"
    mount --bind "$CACHE/debs-$suite" "$r/var/cache/apt/archives"
    mkdir -p "$r/opt/rnic/debs"
    cp "$debs"/*.deb "$r/opt/rnic/debs/"
    timeout 900 chroot "$r" apt-get -q update
    timeout 1800 chroot "$r" sh -c \
        'cd /opt/rnic/debs && DEBIAN_FRONTEND=noninteractive apt-get install -y -q ./*.deb' 
    if ! find "$r/lib/modules/$kver" -name 'rnic.ko*' | grep -q .; then
        cat "$r"/var/lib/dkms/rnic/*/build/make.log 2>/dev/null || true
        echo "rnic-dkms installed no module for $kver"
        return 1
    fi
    umount "$r/var/cache/apt/archives"
    rm -rf "$r/var/lib/apt/lists/"* "$r/var/cache/apt/"*.bin
    lean_initrd "$r" "$kver"
    chroot_unmount "$r"
    trap - EXIT
    printf 'image built %s\nsuite %s\nkernel %s\n' "$(date -u +%FT%TZ)" "$suite" "$kver" \
        >"$r/opt/rnic/IMAGE-INFO"
    make_guest_files "$r" "$kver" "$d"
    stamp_set "image-final-$suite" "$h"
    ls -ls "$d/rootfs.img" "$d/vmlinuz" "$d/initrd.img"
}
