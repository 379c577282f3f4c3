#!/usr/bin/env python3
"""The shim's own cost per traced call on this machine's CPU, without the GPU: the 18-place loop of
tests/e2e/py_sites_bench.py against the fake CUDA runtime (KIT/fake, built with the kit), for the
kit's shim and every KIT/variants/NAME.so, taking turns with an untraced run.

Per build and PAGES (pages touched between two calls, as a training step's own work pushes the
shim's lines and pages out of the caches and the TLB), two measures:
- untimed, with no page touched only (the touching costs tens of microseconds a pair, which would
  bury the difference): the loop's wall time per pair of calls (one cudaMalloc with stacks, one
  cudaFree) against the untraced run's, the median of the faster half of the runs;
- timed (CUMTRACE_SELFTIME=1): the steady call's figure and its parts (medians), the clock the shim
  read and its cost per read, and how the Python thread state was found (shims before stop 24 say
  neither: 0 ns a read).
Builds run in turn, forward and then in reverse order on alternate rounds. No GPU is used, so the
training loop's step-to-step spread is not in these figures; the machine's own spread is (the
development VM's runs fall in speed bands two-fold apart: judge with several rounds).

  host_bench.py --kit KIT [--pages 0,4096,32768] [--reps 5] [--steps 100] [--python python3]
"""
import argparse
import glob
import os
import statistics
import subprocess
import sys

# the self-time line's parts as the training loop's script reads them
from fw_selftime import CLOCK, PARTS, STEADY

HERE = os.path.dirname(os.path.abspath(__file__))


def sites_bench_path():
    """py_sites_bench.py: beside this script in the kit (src/e2e), else in the repository."""
    bench = os.path.join(HERE, "e2e", "py_sites_bench.py")
    if not os.path.isfile(bench):  # run from the repository rather than the kit
        bench = os.path.join(HERE, "..", "e2e", "py_sites_bench.py")
    return bench


def fast_median(xs):
    """The median of the faster half: a shared machine's runs fall in speed bands."""
    xs = sorted(xs)
    return statistics.median(xs[:max(1, len(xs) // 2)])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kit", required=True)
    ap.add_argument("--pages", default="0,4096,32768")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--python", default="python3")
    ap.add_argument("--cpus", default=os.environ.get("OVH_CPUS", ""))
    args = ap.parse_args()
    kit = os.path.abspath(args.kit)
    fake = os.path.join(kit, "fake")
    bench = sites_bench_path()
    for need in (os.path.join(fake, "libcudart.so.13"), bench, os.path.join(kit, "libcumtrace.so")):
        if not os.path.exists(need):
            print("host_bench: %s is missing" % need, file=sys.stderr)
            return 2
    builds = [("kit", os.path.join(kit, "libcumtrace.so"))]
    for so in sorted(glob.glob(os.path.join(kit, "variants", "*.so"))):
        builds.append((os.path.basename(so)[:-3], so))
    pin = ["taskset", "-c", args.cpus] if args.cpus else []
    env0 = dict(os.environ, LD_LIBRARY_PATH=fake + ":" + os.path.join(kit, "lib"),
                CUMTRACE_OUTPUT="/tmp/host-bench.%p.dump")
    ver = subprocess.run([args.python, "-c", "import sys; print(sys.version.split()[0])"],
                         stdout=subprocess.PIPE, text=True).stdout.strip()
    print("host_bench: python %s, %d runs of %d steps per build and page count, builds: %s"
          % (ver, args.reps, args.steps, " ".join(n for n, _ in builds)))
    fails = 0
    for pages in [int(p) for p in args.pages.split(",")]:
        wall = {"untraced": []}
        timed = {}
        for r in range(args.reps):
            # forward, then reversed: what a process's place in the sequence does falls on every
            # build alike (selftime_variants.sh does the same)
            order = [("untraced", None)] + (builds if r % 2 == 0 else builds[::-1])
            for name, so in order:
                for selftime in ([False] if so is None else [False, True]):
                    env = dict(env0)
                    if so:
                        env["LD_PRELOAD"] = so
                    if selftime:
                        env["CUMTRACE_SELFTIME"] = "1"
                    p = subprocess.run(pin + [args.python, bench, fake, str(args.steps), str(pages)],
                                       env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                    for f in glob.glob("/tmp/host-bench.*.dump"):
                        os.unlink(f)
                    if p.returncode != 0:
                        print("FAIL %s pages %d: rc %d %s" % (name, pages, p.returncode, p.stderr[-300:]))
                        fails += 1
                        continue
                    if not selftime:
                        if pages == 0:
                            wall.setdefault(name, []).append(float(p.stdout.split()[-1]))
                        continue
                    s, parts, clk = STEADY.search(p.stderr), PARTS.search(p.stderr), CLOCK.search(p.stderr)
                    if not (s and parts):
                        print("FAIL %s pages %d: no self-time line: %s" % (name, pages, p.stderr[-300:]))
                        fails += 1
                        continue
                    # a shim from before stop 24 says neither its clock nor its thread state's way
                    timed.setdefault(name, []).append(
                        [int(x) for x in s.groups()[1:]]
                        + [int(parts.group(i)) for i in (2, 3, 5, 6)]
                        + [int(clk.group(3)) if clk else 0])
                    timed.setdefault(name + ":how", [clk.group(1), clk.group(2)] if clk else
                                     ["not said (a shim from before stop 24)", "not said"])
        base = fast_median(wall["untraced"]) if wall["untraced"] else 0
        print("pages %d:%s" % (pages, " untraced %.0f ns a pair" % base if base else ""))
        print("  build      traced-untraced ns a pair | steady ns (native, Python, record) lookup checks "
              "thread state walk | clock read ns | steady less 8 reads")
        # a shim that does not say what a clock read costs is charged the others' figure (the
        # counter is the machine's, not the shim's)
        said = [r[-1] for n, _ in builds for r in timed.get(n, []) if r[-1]]
        machine_read = statistics.median(said) if said else 0
        for name, _ in builds:
            if name not in timed:
                continue
            rows = timed[name]
            med = [statistics.median(r[i] for r in rows) for i in range(len(rows[0]))]
            per, nat, pyt, rec, look, chk, ts, walk, read = med
            read = read or machine_read
            untimed = "%8.0f" % (fast_median(wall[name]) - base) if wall.get(name) else "       -"
            print("  %-10s %s                    | %4.0f (%.0f, %.0f, %.0f) %6.0f %6.0f %12.0f %4.0f | "
                  "%13.0f | %5.0f" % (name, untimed, per, nat, pyt, rec, look, chk, ts, walk, read,
                                      per - 8 * read))
        for name, _ in builds:
            how = timed.get(name + ":how")
            if how:
                print("  %-10s thread state %s; clock %s" % (name, how[0], how[1]))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
