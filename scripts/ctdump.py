#!/usr/bin/env python3
"""Decode a cumtrace dump record by record (a debugging aid independent of
cumtrace-report; the layout is include/cumtrace/format.h).

usage: ctdump.py [--stats] DUMP
"""
import struct
import sys
from collections import Counter

REC_NAMES = {0: "pad", 1: "process", 2: "event", 3: "stack", 4: "module", 5: "drops",
             6: "batch", 7: "end", 8: "mark", 10: "symbols", 13: "meminfo"}
EVENT = struct.Struct("<6Q2IiIHBBhBB")


def records(data):
    if data[:8] != b"CUMTRACE":
        raise SystemExit("ctdump: not a cumtrace dump (bad magic)")
    off = struct.unpack_from("<H", data, 10)[0]
    while off + 8 <= len(data):
        rtype, flags, size = struct.unpack_from("<HHI", data, off)
        if size < 8 or size % 8 or off + size > len(data):
            print(f"ctdump: bad or truncated record at offset {off}", file=sys.stderr)
            return
        yield off, rtype, data[off + 8:off + size]
        off += size


def main():
    args = sys.argv[1:]
    stats = "--stats" in args
    args = [a for a in args if a != "--stats"]
    if len(args) != 1:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        sys.exit(2)
    data = open(args[0], "rb").read()
    count = Counter()
    for off, rtype, body in records(data):
        count[REC_NAMES.get(rtype, rtype)] += 1
        if stats:
            continue
        name = REC_NAMES.get(rtype, f"type{rtype}")
        if rtype == 2:
            (ts, dur, ptr, size, stream, aux, tid, stack, result, flags, api, op_kind, kind_, dev,
             layer, _r) = EVENT.unpack_from(body)
            print(f"{off:10d} event ts={ts} dur={dur} api={api} op={op_kind} kind={kind_} "
                  f"ptr={ptr:#x} size={size} stream={stream:#x} tid={tid} stack={stack} "
                  f"result={result} dev={dev}")
        elif rtype == 3:
            sid, depth = struct.unpack_from("<IH", body)
            ips = struct.unpack_from(f"<{depth}Q", body, 8)
            print(f"{off:10d} stack id={sid} depth={depth} " + " ".join(f"{i:#x}" for i in ips[:6]))
        elif rtype == 4:
            base, lo, hi, ts, blen, plen = struct.unpack_from("<4QHH", body)
            path = body[40 + blen:40 + blen + plen].split(b"\0")[0].decode(errors="replace")
            print(f"{off:10d} module base={base:#x} {lo:#x}-{hi:#x} build_id={body[40:40+blen].hex()} {path}")
        elif rtype == 1:
            pid, ppid = struct.unpack_from("<II", body)
            strings = body[32:].split(b"\0")
            print(f"{off:10d} process pid={pid} ppid={ppid} " +
                  " ".join(s.decode(errors="replace") for s in strings if s))
        elif rtype == 10:
            naddrs, nframes, slen = struct.unpack_from("<III", body)
            strings = body[16 + 16 * (naddrs + nframes):][:slen]
            fn = struct.unpack_from("<I", body, 16 + 16 * naddrs)[0] if nframes else 0xffffffff
            first = strings[fn:].split(b"\0")[0].decode(errors="replace") if fn < slen else "-"
            print(f"{off:10d} symbols addresses={naddrs} frames={nframes} strings={slen} first={first}")
        elif rtype == 13:
            ts, call_ts, free, total, tid, dev = struct.unpack_from("<4QIh", body)
            print(f"{off:10d} meminfo ts={ts} call_ts={call_ts} tid={tid} dev={dev} "
                  f"free={free} total={total}")
        else:
            print(f"{off:10d} {name} size={len(body) + 8}")
    if stats:
        for k, v in sorted(count.items(), key=lambda kv: str(kv[0])):
            print(f"{k} {v}")


if __name__ == "__main__":
    main()
