# SPDX-License-Identifier: GPL-2.0-or-later
"""The KVM probe: whether this host runs the VMs under KVM or TCG."""

import hashlib
import os
import signal
import subprocess
import time

KVM_PROBE_TIMEOUT = 20


def kvm_probe(qemu, kvm_dev="/dev/kvm", timeout=KVM_PROBE_TIMEOUT, use_cache=True,
              kernel=None, firmware_dirs=()):
    """(works, why): runs a KVM guest in a child QEMU.

    With 'kernel', the guest kernel itself boots until it finds no root
    file system and panics (panic=-1 and -no-reboot make QEMU exit): a
    host can run firmware under KVM for a while and still stop the
    kernel with a "KVM internal error" (emulation failure; the VM then
    sits paused for ever), as nested setups do.  Without one, a bare
    machine runs for a second.  'firmware_dirs' go to -L, as for the
    VMs: a QEMU build tree's binary finds no BIOS without them.  Some hosts have a /dev/kvm that hangs:
    the child is then abandoned after 'timeout' seconds (a task stuck in
    the kernel may not even die).  The answer is kept per boot, QEMU
    binary and kernel, so a test suite probes once.
    """
    if not os.access(kvm_dev, os.R_OK | os.W_OK):
        return False, "no usable %s" % kvm_dev
    ident = ""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="utf-8") as f:
            boot = f.read().strip()
        for path in [qemu] + ([kernel] if kernel else []):
            st = os.stat(path)
            ident += " %s %d %d" % (os.path.realpath(path), st.st_size, st.st_mtime_ns)
        ident += " -L " + " ".join(firmware_dirs)
    except OSError:
        boot = None
    cache = None
    if boot and use_cache:
        key = hashlib.sha256((boot + ident).encode()).hexdigest()[:16]
        cache = os.path.join(os.environ.get("XDG_RUNTIME_DIR") or "/tmp",
                             "rnic-kvm-probe-%s" % key)
        try:
            with open(cache, encoding="utf-8") as f:
                works, why = f.read().split(" ", 1)
            return works == "yes", why.strip()
        except (OSError, ValueError):
            pass
    argv = [qemu, "-accel", "kvm", "-cpu", "host", "-machine", "q35",
            "-nodefaults", "-no-user-config", "-display", "none"]
    for d in firmware_dirs:
        argv += ["-L", d]
    if kernel:
        argv += ["-m", "256", "-no-reboot", "-kernel", kernel,
                 "-append", "console=ttyS0 panic=-1 root=/dev/rnic-kvm-probe",
                 "-serial", "stdio", "-monitor", "none"]
    else:
        argv += ["-m", "64", "-S", "-monitor", "stdio"]
    try:
        child = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, start_new_session=True)
    except OSError as e:
        return False, "probe did not start: %s" % e
    if not kernel:
        try:
            child.stdin.write(b"cont\n")
            child.stdin.flush()
            time.sleep(1)
            child.stdin.write(b"quit\n")
            child.stdin.flush()
        except OSError:
            pass
    try:
        out, _ = child.communicate(timeout=timeout)
        rc = child.returncode
        works, why = rc == 0, "probe exited with %d" % rc
        if works and kernel:
            works = b"Kernel panic" in out
            why = ("the guest kernel booted to its expected panic" if works else
                   "QEMU exited without the guest kernel's panic")
    except subprocess.TimeoutExpired:
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except OSError:
            pass
        works, why = False, ("%s: no %s in %gs" % (
            kvm_dev, "guest kernel boot" if kernel else "answer", timeout))
    if cache:
        try:
            with open(cache, "w", encoding="utf-8") as f:
                f.write("%s %s\n" % ("yes" if works else "no", why))
        except OSError:
            pass
    return works, why
