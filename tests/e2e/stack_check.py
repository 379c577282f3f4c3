"""Check the native stacks of a dump (t_stack_cache.sh).

  stack_check.py expect DUMP OUT   every allocation OUT (stackcache's output)
                                   lists has one event of its size whose frame 0
                                   lies in leaf() and whose frames 1..n are the
                                   listed return addresses (format.h)
  stack_check.py frames DUMP       each allocation's size and whole stack, every
                                   frame as module name + offset (to compare runs)
"""
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bin"))
import ctdump  # noqa: E402

EVENT = struct.Struct("<6Q2IiIHBBhBB")
OP_ALLOC = 1


def load(path):
    """(allocation events as (size, stack id), stacks by id, modules)"""
    events, stacks, modules = [], {}, []
    for _, rtype, _, body in ctdump.records(open(path, "rb").read()):
        if rtype == 2:
            f = EVENT.unpack_from(body)
            size, stack_id, op = f[3], f[7], f[11]
            if op == OP_ALLOC:
                events.append((size, stack_id))
        elif rtype == 3:
            sid, depth = struct.unpack_from("<IH", body)
            stacks[sid] = struct.unpack_from(f"<{depth}Q", body, 8)
        elif rtype == 4:
            base, lo, hi, _ts, blen, plen = struct.unpack_from("<4QHH", body)
            name = body[40 + blen:40 + blen + plen].split(b"\0")[0].decode(errors="replace")
            modules.append((lo, hi, base, os.path.basename(name)))
    return events, stacks, modules


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def expect(dump, out):
    events, stacks, _ = load(dump)
    by_size = {}
    for size, sid in events:
        by_size.setdefault(size, []).append(sid)
    leaf = None
    checked = 0
    for line in open(out):
        w = line.split()
        if w and w[0] == "leaf":
            leaf = int(w[1], 16)
        if not w or w[0] != "alloc":
            continue
        size, ras = int(w[1]), [int(x, 16) for x in w[2:]]
        sids = by_size.get(size, [])
        if len(sids) != 1:
            fail(f"allocation of {size} bytes: {len(sids)} events in the dump")
        ips = stacks.get(sids[0])
        if ips is None:
            fail(f"allocation of {size} bytes: no stack")
        if not leaf <= ips[0] < leaf + 4096:
            fail(f"allocation of {size} bytes: frame 0 {ips[0]:#x} is not in leaf ({leaf:#x})")
        want = ras
        got = list(ips[1:1 + len(want)])
        if got != want:
            fail(f"allocation of {size} bytes: frames 1..{len(want)} are "
                 f"{' '.join(hex(x) for x in got)}, expected {' '.join(hex(x) for x in want)}")
        checked += 1
    if checked == 0:
        fail("no allocation listed")
    print(f"ok: {checked} allocations have exactly the expected frames")


def frames(dump):
    events, stacks, modules = load(dump)

    def where(ip):
        for lo, hi, base, name in modules:
            if lo <= ip < hi:
                return f"{name}+{ip - base:#x}"
        return "?"
    for size, sid in sorted(events):
        print(size, " ".join(where(ip) for ip in stacks.get(sid, ())))


if len(sys.argv) == 4 and sys.argv[1] == "expect":
    expect(sys.argv[2], sys.argv[3])
elif len(sys.argv) == 3 and sys.argv[1] == "frames":
    frames(sys.argv[2])
else:
    sys.exit(__doc__)
