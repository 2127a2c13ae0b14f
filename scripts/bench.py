#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
The rnic benchmark: rnic against Soft-RoCE (rxe on virtio-net) in the same
VMs, in one run.

    bench.py [--smoke] [--reps N] [--out DIR] [--no-scale] [--only RUNS]
             -- LAUNCHER-ARGS...

LAUNCHER-ARGS go to every scripts/vmlaunch.py call (QEMU binary, kernel,
image, firmware directories).  The runs:

  main     2 VMs, each with the rnic device and rxe0 on its virtio NIC; the
           guest's 'rnic-bench main' alternates every row on rxe and rnic;
  middleware  2 VMs as in main: ucx_perftest over UCX's RC transport,
           NetPIPE over Open MPI's pml ucx and qperf's RC tests, on rxe and
           rnic.  A row a device cannot run says so in the table, with the
           program's reason;
  loss     2 VMs as in main, every RoCE frame either NIC sends through a
           faulty wire (vmlaunch --wire-fault, QEMU's filter-wirefault) that
           loses 1%: 64 KiB writes on rxe and rnic, and the frames the wires
           saw and dropped, which the launcher reads at the end;
  mcast    2 VMs on a socket-multicast segment: the same 64 KiB writes;
  nice     2 VMs as in main, their vCPU threads at nice 19 (vmlaunch
           --vcpu-nice): the latency rows again, on rxe and rnic.  On a host
           with fewer cores than busy threads, a guest spinning on memory
           keeps its core while the main loop running the NIC waits;
  scale    8 VMs (four pairs) on a host Linux bridge with tap devices (as
           root) and on a multicast segment: one pair alone, then all four.

--smoke runs 'main' only, with tiny runs and one repetition: it checks that
the chain works end to end (README command 2 runs it).  --only runs the
runs named (main,middleware,loss,mcast,nice,scale) and nothing else, also
with --smoke.  Every figure is a median over the repetitions; the host's
memcpy bandwidth, measured in the same run, is the ceiling of the device's
data path.  The table, a CSV and a PNG plot go to the output directory.
Nothing here is a pass/fail threshold, but a row that produced no figure
fails the run, except one that rxe could not run, which the table names
with the program's reason.
"""

import argparse
import csv
import os
import re
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LAUNCHER = os.path.join(ROOT, "scripts", "vmlaunch.py")
LINE = re.compile(r"RNIC-BENCH (\S+) (rnic|rxe) (\d+) (.*)$")
# A row the device could not run, and the program's reason.
FAIL_LINE = re.compile(r"RNIC-BENCH-FAIL (\S+) (rnic|rxe) (\d+) (.*)$")
# The launcher's log of a faulty wire's counters ("wire-faults" host check).
WIRE_LINE = re.compile(r"^vm\d+: wire fault \S+ on (\S+): (.*)$")
# The loss run's wire, and which device's RoCE each netdev carries.
LOSS_WIRE = "loss=1,seed=3"
WIRE_DEV = {"n0": "rxe", "r0": "rnic"}

# (row key, label, metric, unit, higher is better)
ROWS = [
    ("write_bw_64", "ib_write_bw 64 B", "gbps", "Gb/s", True),
    ("write_bw_4096", "ib_write_bw 4 KiB", "gbps", "Gb/s", True),
    ("write_bw_65536", "ib_write_bw 64 KiB", "gbps", "Gb/s", True),
    ("write_bw_1048576", "ib_write_bw 1 MiB", "gbps", "Gb/s", True),
    ("read_bw_4096", "ib_read_bw 4 KiB", "gbps", "Gb/s", True),
    ("read_bw_65536", "ib_read_bw 64 KiB", "gbps", "Gb/s", True),
    ("send_bw_4096", "ib_send_bw 4 KiB", "gbps", "Gb/s", True),
    ("atomic_bw", "ib_atomic_bw", "mpps", "Mop/s", True),
    ("write_bw_4096_q64", "ib_write_bw 4 KiB -q 64", "gbps", "Gb/s", True),
    ("send_lat_8", "ib_send_lat 8 B typical", "typ_us", "us", False),
    ("send_lat_8", "ib_send_lat 8 B p99", "p99_us", "us", False),
    ("write_lat_8", "ib_write_lat 8 B typical", "typ_us", "us", False),
    ("write_lat_8", "ib_write_lat 8 B p99", "p99_us", "us", False),
    ("cpu_send_65536", "guest CPU per GB (send 64 KiB, events)", "cpu_per_gb", "s/GB", False),
    ("mr_reg", "register a 1 GiB MR", "seconds", "s", False),
    ("nvme_randread_4k", "NVMe-oF 4 KiB randread qd32", "iops", "IOPS", True),
    ("nvme_read_128k", "NVMe-oF 128 KiB seq read", "mbps", "MB/s", True),
]
# The middleware run's rows.  ucx_perftest's "MB/s" are MiB/s; qperf's MB
# are 10^6 bytes.  The latencies are half a round trip, as perftest's.
MW_ROWS = [
    ("ucx_tag_bw_65536", "ucx_perftest tag_bw 64 KiB (UCX rc_verbs)", "mbps", "MiB/s", True),
    ("ucx_tag_lat_8", "ucx_perftest tag_lat 8 B typical (UCX rc_verbs)", "typ_us", "us", False),
    ("netpipe", "NetPIPE, Open MPI pml ucx: peak bandwidth", "gbps", "Gb/s", True),
    ("netpipe", "NetPIPE, Open MPI pml ucx: 1 B latency", "typ_us", "us", False),
    ("qperf_rc_bw", "qperf -cm1 rc_bw", "mbps", "MB/s", True),
    ("qperf_rc_lat", "qperf -cm1 rc_lat", "typ_us", "us", False),
]
RUNS = ("main", "middleware", "loss", "mcast", "nice", "scale")
BW_SIZES = [64, 4096, 65536, 1048576]
# The 'nice' run: its vCPU threads' nice value, and the rows it repeats.
NICE = 19
NICE_ROWS = [r for r in ROWS if r[0] in ("send_lat_8", "write_lat_8")]


def memcpy_gbps(size=256 << 20, rounds=8):
    """The host's memcpy bandwidth in GB/s (bytearray slice copy is memmove)."""
    src = bytearray(os.urandom(1 << 20)) * (size >> 20)
    dst = bytearray(size)
    best = 0.0
    for _ in range(rounds):
        t = time.perf_counter()
        dst[:] = src
        dt = time.perf_counter() - t
        best = max(best, size / dt / 1e9)
    return best


def parse_logs(workdir, fails=None):
    """{(row, dev): [{rep: {key: value}}]} from every VM's serial log; the
    rows a device failed go into FAILS, {(row, dev): reason}."""
    data = {}
    for name in sorted(os.listdir(workdir)):
        if not name.endswith(".serial.log"):
            continue
        with open(os.path.join(workdir, name), errors="replace") as f:
            for line in f:
                m = FAIL_LINE.search(line.strip())
                if m and fails is not None:
                    fails.setdefault((m.group(1), m.group(2)), m.group(4).strip())
                m = LINE.search(line.strip())
                if not m:
                    continue
                row, dev, rep, rest = m.groups()
                entry = data.setdefault((row, dev), {}).setdefault(int(rep), {})
                for kv in rest.split():
                    k, _, v = kv.partition("=")
                    try:
                        entry[k] = float(v)
                    except ValueError:
                        pass
    return data


def wire_counts(workdir):
    """{device: {counter: sum over the VMs}} of the faulty wires' counters
    the launcher logged; {} if it logged none."""
    counts = {}
    try:
        with open(os.path.join(workdir, "launcher.log")) as f:
            lines = f.read().splitlines()
    except OSError:
        return counts
    for line in lines:
        m = WIRE_LINE.match(line)
        if not m:
            continue
        dev = counts.setdefault(WIRE_DEV.get(m.group(1), m.group(1)), {})
        for kv in m.group(2).split():
            k, _, v = kv.partition("=")
            dev[k] = dev.get(k, 0) + int(v)
    return counts


def accel_of(workdir):
    try:
        with open(os.path.join(workdir, "launcher.log")) as f:
            for line in f:
                if line.startswith("accelerator "):
                    return line.split()[1]
    except OSError:
        pass
    return "?"


class Bench:
    def __init__(self, args):
        self.args = args
        self.out = os.path.abspath(args.out)
        os.makedirs(self.out, exist_ok=True)
        self.failed = []
        self.fails = {}     # {(row, dev): reason} of the rows a device failed
        self.accel = "?"
        self.main = {}
        self.extra = {}
        self.wire = {}      # the loss run's wire counters, by device

    def launch(self, plan, extra, vms=2, timeout=3600):
        workdir = os.path.join(self.out, plan)
        env = ["--env", "RNIC_BENCH_REPS=%d" % self.args.reps,
               "--env", "RNIC_BENCH_SMOKE=%d" % self.args.smoke]
        guest_plan = {"main": "main", "middleware": "middleware", "nice": "latency",
                      "loss": "loss", "scale-bridge": "scale",
                      "scale-mcast": "scale"}.get(plan, "single")
        argv = [sys.executable, LAUNCHER] + self.args.launcher + [
            "--name", "bench-" + plan, "--workdir", workdir, "-q",
            "--vms", str(vms), "--timeout", str(timeout),
            "--cmd", "rnic-bench " + guest_plan] + env + extra
        print("bench: run '%s' (%d VMs), logs in %s" % (plan, vms, workdir), flush=True)
        t = time.monotonic()
        rc = subprocess.run(argv).returncode
        print("bench: run '%s' %s after %.0f s" % (plan, "done" if rc == 0 else
              "FAILED (status %d)" % rc, time.monotonic() - t), flush=True)
        if rc != 0:
            self.failed.append(plan)
        if self.accel == "?":
            self.accel = accel_of(workdir)
        return parse_logs(workdir, self.fails)

    def run(self):
        a = self.args
        self.memcpy = memcpy_gbps()
        print("bench: host memcpy %.1f GB/s" % self.memcpy, flush=True)
        both = ["--rnic", "--rxe", "--mem", "2048"]
        if "main" in a.only:
            self.main = self.launch("main", both, timeout=600 if a.smoke else 5400)
        if "middleware" in a.only:
            self.extra["middleware"] = self.launch("middleware", both)
        if "loss" in a.only:
            self.extra["loss"] = self.launch("loss", both + ["--wire-fault", LOSS_WIRE])
            self.wire = wire_counts(os.path.join(self.out, "loss"))
        if "mcast" in a.only:
            self.extra["mcast"] = self.launch("mcast", ["--rnic", "--net", "mcast"])
        if "nice" in a.only:
            self.extra["nice"] = self.launch("nice", both + ["--vcpu-nice", str(NICE)])
        if "scale" in a.only and not a.no_scale:
            if os.geteuid() == 0:
                self.extra["scale-bridge"] = self.launch(
                    "scale-bridge", ["--rnic", "--net", "tap"], vms=8)
            else:
                print("bench: not root, no bridge for the scale row", flush=True)
            self.extra["scale-mcast"] = self.launch(
                "scale-mcast", ["--rnic", "--net", "mcast"], vms=8)
        return self.report()

    # ---- figures -------------------------------------------------------------

    def value(self, data, row, dev, metric):
        reps = data.get((row, dev), {})
        base = data.get((row + "_base", dev), {})
        vals = []

        def cpu(r):
            return r.get("cpu_s_vm0", 0.0) + r.get("cpu_s_vm1", 0.0)
        for rep, r in reps.items():
            if metric == "cpu_per_gb":
                # Both VMs' CPU time, less that of a tiny run of the same
                # tool (start-up, connection and teardown cost the same).
                b = base.get(rep)
                if not b or not all(k in x for x in (r, b) for k in ("bytes", "iters")):
                    continue
                gb = r["bytes"] * (r["iters"] - b["iters"]) / 1e9
                if gb > 0:
                    vals.append(max(cpu(r) - cpu(b), 0.0) / gb)
            elif metric in r:
                vals.append(r[metric])
        return statistics.median(vals) if vals else None

    def report(self):
        table = []     # (label, unit, rxe, rnic, advantage, note)

        def add(label, unit, rxe, rnic, higher, note=""):
            adv = None
            if isinstance(rxe, str) or isinstance(rnic, str):
                adv = "n/a"
            elif rxe and rnic:
                adv = rnic / rxe if higher else rxe / rnic
            table.append((label, unit, rxe, rnic, adv, note))

        missing = []
        for key, label, metric, unit, higher in ROWS if self.main else ():
            rxe = self.value(self.main, key, "rxe", metric)
            rnic = self.value(self.main, key, "rnic", metric)
            if rxe is None or rnic is None:
                missing.append(label)
            note = ""
            if metric == "gbps" and rnic:
                note = "%.1f%% of memcpy" % (100 * rnic / (self.memcpy * 8))
            add(label, unit, rxe, rnic, higher, note)
        def both(data, key, label, metric):
            """{device: figure} of a row run on both devices, and the note
            of the devices that failed it.  A device that could not run the
            row: the table says so and why, and gives no ratio; only rxe
            may.  (The guest stops a row on a device at its first failure,
            so a figure with a failure comes from the repetitions before
            it.)"""
            got = {d: self.value(data, key, d, metric) for d in ("rxe", "rnic")}
            notes = ["%s: %s (%s)" % (d, "fails" if got[d] is None else
                                      "failed in a later repetition", self.fails[(key, d)])
                     for d in ("rxe", "rnic") if (key, d) in self.fails]
            for d in ("rxe", "rnic"):
                if got[d] is None and (d == "rnic" or (key, d) not in self.fails):
                    missing.append("%s on %s" % (label, d))
                elif got[d] is None:
                    got[d] = "fails"
            return got, notes

        if "middleware" in self.extra:
            for key, label, metric, unit, higher in MW_ROWS:
                got, notes = both(self.extra["middleware"], key, label, metric)
                add(label, unit, got["rxe"], got["rnic"], higher, "; ".join(notes))
        if "loss" in self.extra:
            label = "ib_write_bw 64 KiB at 1% loss"
            got, notes = both(self.extra["loss"], "write_bw_65536", label, "gbps")
            for d in ("rxe", "rnic"):
                lossless = self.value(self.main, "write_bw_65536", d, "gbps")
                if isinstance(got[d], float) and lossless:
                    notes.append("%s %.0f%% of lossless" % (d, 100 * got[d] / lossless))
            # What the wires did, as the launcher read it from QEMU: RoCE
            # frames the NICs sent, and how many of them the wire dropped.
            wire = "; ".join("%s %d of %d RoCE frames dropped" % (d, c.get("dropped", 0),
                                                             c.get("frames", 0))
                             for d, c in sorted(self.wire.items(), reverse=True))
            notes.insert(0, "wire %s%s" % (LOSS_WIRE, ": " + wire if wire else
                                           " (its counters were not read)"))
            add(label, "Gb/s", got["rxe"], got["rnic"], True, "; ".join(notes))
        if "mcast" in self.extra:
            label = "ib_write_bw 64 KiB, multicast segment"
            lossless = self.value(self.main, "write_bw_65536", "rnic", "gbps")
            v = self.value(self.extra["mcast"], "write_bw_65536", "rnic", "gbps")
            note = "%.0f%% of stream, lossless" % (100 * v / lossless) if v and lossless else ""
            if v is None:
                missing.append(label)
            add(label, "Gb/s", None, v, True, note)
        if "nice" in self.extra:
            for key, label, metric, unit, higher in NICE_ROWS:
                label += ", vCPUs at nice %d" % NICE
                rxe = self.value(self.extra["nice"], key, "rxe", metric)
                rnic = self.value(self.extra["nice"], key, "rnic", metric)
                if rxe is None or rnic is None:
                    missing.append(label)
                add(label, unit, rxe, rnic, higher)
        for plan in ("scale-bridge", "scale-mcast"):
            if plan not in self.extra:
                continue
            d = self.extra[plan]
            alone = self.value(d, "scale_alone", "rnic", "gbps")
            pairs = [self.value(d, "scale_pair_%d" % p, "rnic", "gbps") for p in range(4)]
            where = "bridge" if plan == "scale-bridge" else "multicast"
            if alone is None or None in pairs:
                missing.append("scale on " + where)
                continue
            agg = sum(pairs)
            add("8 VMs, 4 pairs, %s: aggregate" % where, "Gb/s", None, agg, True,
                "%.2fx one pair alone (%.3f)" % (agg / alone, alone))
            add("8 VMs, 4 pairs, %s: per pair" % where, "Gb/s", None, min(pairs), True,
                "min; max %.3f" % max(pairs))

        self.write(table)
        if self.main:
            self.plot()
        if missing:
            print("bench: FAILED: no figure for: " + ", ".join(missing), flush=True)
        if self.failed:
            print("bench: FAILED runs: " + ", ".join(self.failed), flush=True)
        return 1 if missing or self.failed else 0

    def write(self, table):
        def fmt(v):
            if v is None:
                return "-"
            if isinstance(v, str):
                return v
            return "%.3f" % v if v < 100 else "%.0f" % v
        mtu = {d: self.value(self.main, "path_mtu", d, "mtu") for d in ("rnic", "rxe")}
        head = ("rnic benchmark, %s, %s, accelerator %s, %d repetition(s)%s, "
                "host memcpy %.1f GB/s"
                % (time.strftime("%Y-%m-%d"), os.uname().machine + " " +
                   str(os.cpu_count()) + " cores", self.accel, self.args.reps,
                   " (smoke)" if self.args.smoke else "", self.memcpy))
        # The main run measures the path MTUs; --only may leave it out.
        if self.main:
            head += (", path MTU rnic %s, rxe %s (each device's default)"
                     % tuple("%d" % mtu[d] if mtu[d] else "?" for d in ("rnic", "rxe")))
        lines = [head, "",
                 "| test | unit | rxe | rnic | rnic advantage | note |",
                 "|---|---|---|---|---|---|"]
        for label, unit, rxe, rnic, adv, note in table:
            lines.append("| %s | %s | %s | %s | %s | %s |" % (
                label, unit, fmt(rxe), fmt(rnic),
                adv if isinstance(adv, str) else "%.1fx" % adv if adv else "-", note))
        lines.append("")
        lines.append("rnic advantage: rnic/rxe for rates, rxe/rnic for times, "
                     "latencies and CPU (above 1 means rnic is better); medians.")
        text = "\n".join(lines) + "\n"
        with open(os.path.join(self.out, "table.md"), "w") as f:
            f.write(text)
        with open(os.path.join(self.out, "results.csv"), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["test", "unit", "rxe", "rnic", "rnic_advantage", "note"])
            for label, unit, rxe, rnic, adv, note in table:
                w.writerow([label, unit] + [
                    "" if v is None else v if isinstance(v, str) else fmt_csv % v
                    for v, fmt_csv in ((rxe, "%.6g"), (rnic, "%.6g"), (adv, "%.4g"))]
                    + [note])
        print(text, flush=True)
        print("bench: table, CSV and plot in %s" % self.out, flush=True)

    def plot(self):
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for dev, marker, color in (("rnic", "o", "tab:blue"), ("rxe", "s", "tab:orange")):
            for tool, sizes, style in (("write", BW_SIZES, "-"), ("read", (4096, 65536), ":")):
                pts = [(s, self.value(self.main, "%s_bw_%d" % (tool, s), dev, "gbps"))
                       for s in sizes]
                pts = [(s, v) for s, v in pts if v is not None]
                ax.plot([s for s, _ in pts], [v for _, v in pts], marker=marker,
                        color=color, linestyle=style, label="%s ib_%s_bw" % (dev, tool))
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("message size (bytes)")
        ax.set_ylabel("bandwidth (Gb/s)")
        ax.set_title("rnic vs Soft-RoCE, same VMs (%s, %s)"
                     % (self.accel, time.strftime("%Y-%m-%d")))
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
        fig.tight_layout()
        fig.savefig(os.path.join(self.out, "bandwidth.png"), dpi=100)
        plt.close(fig)


def main(argv):
    if "--" in argv:
        i = argv.index("--")
        own, launcher = argv[:i], argv[i + 1:]
    else:
        own, launcher = argv, []
    p = argparse.ArgumentParser(prog="bench.py", description=__doc__.split("\n\n")[1])
    p.add_argument("--smoke", action="store_true", help="tiny runs of 'main' only")
    p.add_argument("--reps", type=int, help="repetitions (default 5, smoke 1)")
    p.add_argument("--out", help="results directory (default .cache/bench/DATE-TIME)")
    p.add_argument("--no-scale", action="store_true", help="skip the 8-VM scale runs")
    p.add_argument("--only", metavar="RUNS",
                   help="comma-separated runs to do (default all: %s; with --smoke, main)"
                   % ",".join(RUNS))
    args = p.parse_args(own)
    args.only = (args.only or ("main" if args.smoke else ",".join(RUNS))).split(",")
    bad = [r for r in args.only if r not in RUNS]
    if bad:
        p.error("--only: no run %s (runs: %s)" % (", ".join(bad), ", ".join(RUNS)))
    args.launcher = launcher
    args.smoke = int(args.smoke)
    if args.reps is None:
        args.reps = 1 if args.smoke else 5
    if not args.out:
        args.out = os.path.join(ROOT, ".cache", "bench", time.strftime("%Y%m%d-%H%M%S"))
    return Bench(args).run()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
