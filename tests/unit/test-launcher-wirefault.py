#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The launcher's faulty wire (--wire-fault), without VMs: the
# filter-wirefault objects it gives every VM (one per netdev that carries
# RoCE, on the frames the NIC sends, RoCE only, a seed of its own per
# wire), what the guest is told, and the specs it refuses.

import unittest

from launcher_checks import launch, refused


def objects(qemu):
    return [qemu[k + 1] for k, a in enumerate(qemu) if a == "-object"]


def netdev_ids(qemu):
    return [qemu[k + 1].split("id=")[1].split(",")[0]
            for k, a in enumerate(qemu) if a == "-netdev"]


class WireFaultTest(unittest.TestCase):
    def test_both_devices_same_faults(self):
        # rnic on r0, rxe0 on the virtio NIC's n0: a wire on each, in
        # either VM, the same faults, a seed of each wire's own.
        vms = launch(["--rnic", "--rxe", "--wire-fault", "loss=1,seed=3"])
        want = [
            ["filter-wirefault,id=wf-n0,netdev=n0,queue=rx,roce-only=on,loss=1,seed=3",
             "filter-wirefault,id=wf-r0,netdev=r0,queue=rx,roce-only=on,loss=1,seed=4"],
            ["filter-wirefault,id=wf-n0,netdev=n0,queue=rx,roce-only=on,loss=1,seed=5",
             "filter-wirefault,id=wf-r0,netdev=r0,queue=rx,roce-only=on,loss=1,seed=6"],
        ]
        for i, (qemu, env) in enumerate(vms):
            with self.subTest(vm=i):
                self.assertEqual(objects(qemu), want[i])
                # Every filter's netdev is one the VM has.
                self.assertEqual(netdev_ids(qemu), ["n0", "r0"])
                self.assertEqual(env["RNIC_WIRE_FAULT"], "loss=1,seed=3")

    def test_every_fault_passed_on(self):
        spec = "duplicate=4,reorder=5,delay-us=200,delay=3,ce-mark=2,corrupt=1,loss=6"
        (qemu, env), = launch(["--net", "user", "--wire-fault", spec])
        # Without --rnic only the virtio NIC; the options in a fixed order,
        # the seed 0 (the filter's fixed one) for VM 0's first wire.
        self.assertEqual(objects(qemu), [
            "filter-wirefault,id=wf-n0,netdev=n0,queue=rx,roce-only=on,loss=6,"
            "corrupt=1,ce-mark=2,delay=3,reorder=5,duplicate=4,delay-us=200,seed=0"])
        self.assertEqual(env["RNIC_WIRE_FAULT"],
                         "loss=6,corrupt=1,ce-mark=2,delay=3,reorder=5,duplicate=4,"
                         "delay-us=200")

    def test_seed_per_vm_with_listen_connect(self):
        # Two launchers: the seed follows the VM index, not the launcher.
        (qemu, _), = launch(["--rnic", "--connect", "h:5555", "--wire-fault", "loss=2,seed=10"])
        self.assertEqual([o.rsplit("seed=", 1)[1] for o in objects(qemu)], ["12", "13"])

    def test_seed_wraps(self):
        (qemu, _), = launch(["--rnic", "-n", "1", "--wire-fault", "seed=4294967295"])
        self.assertEqual([o.rsplit("seed=", 1)[1] for o in objects(qemu)],
                         ["4294967295", "0"])

    def test_none_without_the_option(self):
        for qemu, env in launch(["--rnic", "--rxe"]):
            self.assertFalse([o for o in objects(qemu) if "wirefault" in o])
            self.assertNotIn("RNIC_WIRE_FAULT", env)

    def test_refused(self):
        for spec in ("loss=101", "jitter=1", "loss=x", "loss", "loss=-1", "",
                     "seed=4294967296", "loss=1,,seed=2"):
            with self.subTest(spec):
                self.assertTrue(refused(["--wire-fault", spec]))


if __name__ == "__main__":
    unittest.main()
