# SPDX-License-Identifier: GPL-2.0-or-later
"""The VM launcher behind scripts/vmlaunch.py, one module per concern.

  cli      the command line: options, a script's '# vmlaunch:' lines, main()
  run      the run: N VMs started, watched to their end, and the verdict
  vm       one VM: its QEMU process and its serial console
  net      how the VMs are joined: segments, addresses, bridges and taps
  qmp      QMP access, and the host checks a guest asks for
  migrate  live migration of a VM to a new QEMU
  kvm      the probe that decides between KVM and TCG
  cache    the record of passed runs (--result-cache)
  paths    where the repository and its cache are
"""
