#!/usr/bin/env python3
"""Decode a cumtrace dump record by record (a debugging aid independent of
cumtrace-report; the layout is include/cumtrace/format.h, whose CT_REC_LIST table of record
types this script reads at run time).

Compressed runs (CT_REC_ZSTD) are expanded in place: their records are printed
with the offset of the compressed record and "+N", N the record's offset in the
decompressed run. Python has no zstd module before 3.14, so the frames are
decompressed with libzstd.so.1 through ctypes or, failing that, the `zstd`
command; with neither, a compressed record is printed as such with a note, and
`records()` raises ZstdUnavailable.

Packed events (CT_REC_EVENTS, include/cumtrace/packed.h) are expanded too:
each event takes the run's place as the CT_REC_EVENT record it stands for,
its offset given as the run's and "#K", K its index in the run.

Framework events (layer 5: PyTorch's caching allocator, format.h "Framework
events") are printed with their action and pool id; framework_events() returns
them decoded, Python stacks resolved, for scripts and tests.

usage: ctdump.py [--stats] DUMP
"""
import ctypes
import ctypes.util
import os
import re
import shutil
import struct
import subprocess
import sys
from collections import Counter


def _format_h():
    """include/cumtrace/format.h: $CUMTRACE_FORMAT_H, else ../include/cumtrace/
    from this file (the source tree and an installed PREFIX/bin alike), else
    beside it."""
    here = os.path.dirname(os.path.abspath(__file__))
    for path in (os.environ.get("CUMTRACE_FORMAT_H"),
                 os.path.join(here, "..", "include", "cumtrace", "format.h"),
                 os.path.join(here, "format.h")):
        if path and os.path.exists(path):
            return path
    sys.exit("ctdump: cannot find include/cumtrace/format.h (set CUMTRACE_FORMAT_H)")


def _record_types(header):
    """{number: (name, minimum size)} from format.h's CT_REC_LIST rows."""
    text = open(header).read().split("#define CT_REC_LIST(X)")[1].split("enum ct_rec_type")[0]
    rows = re.findall(r"X\((\w+), (\d+), (\w+), (\w+), (\d+), ([01])\)", text)
    if not rows:
        sys.exit("ctdump: no CT_REC_LIST rows in %s" % header)
    return {int(num): (name, int(size)) for _NAME, num, name, _struct, size, _ticks in rows}


FORMAT_H = _format_h()
REC_TYPES = _record_types(FORMAT_H)
REC_NAMES = {num: name for num, (name, _size) in REC_TYPES.items()}
REC_NUM = {name: num for num, name in REC_NAMES.items()}
EVENT = struct.Struct("<6Q2IiIHBBhBB")
LAYER_FRAMEWORK = 5
FW_F_POOL = 0x1
EVENT_F_PYSTACK = 0x1
REC_ZSTD = REC_NUM["zstd"]
REC_EVENTS = REC_NUM.get("events", -1)
U64 = (1 << 64) - 1
ZSTD_RAW_MAX = 4 << 20


class ZstdUnavailable(Exception):
    pass


class BadRecord(Exception):
    pass


_libzstd = None


def _load_libzstd():
    global _libzstd
    if _libzstd is None:
        _libzstd = False
        for name in ("libzstd.so.1", ctypes.util.find_library("zstd")):
            if not name:
                continue
            try:
                lib = ctypes.CDLL(name)
            except OSError:
                continue
            lib.ZSTD_decompress.restype = ctypes.c_size_t
            lib.ZSTD_decompress.argtypes = [ctypes.c_void_p, ctypes.c_size_t,
                                            ctypes.c_void_p, ctypes.c_size_t]
            lib.ZSTD_isError.restype = ctypes.c_uint
            lib.ZSTD_isError.argtypes = [ctypes.c_size_t]
            _libzstd = lib
            break
    return _libzstd


def zstd_decompress(frame, raw_size):
    """The raw_size bytes a zstd frame holds (libzstd via ctypes, else the zstd CLI)."""
    lib = _load_libzstd()
    if lib:
        out = ctypes.create_string_buffer(max(raw_size, 1))
        n = lib.ZSTD_decompress(out, raw_size, frame, len(frame))
        if lib.ZSTD_isError(n) or n != raw_size:
            raise BadRecord("zstd frame does not decompress to %d bytes" % raw_size)
        return out.raw[:raw_size]
    if shutil.which("zstd"):
        p = subprocess.run(["zstd", "-dcq"], input=frame, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
        if p.returncode != 0 or len(p.stdout) != raw_size:
            raise BadRecord("zstd frame does not decompress to %d bytes" % raw_size)
        return p.stdout
    raise ZstdUnavailable("a compressed dump needs libzstd.so.1 or the zstd command "
                          "(or trace with CUMTRACE_COMPRESS=0)")


def _walk(data, start, end):
    """(offset, type, flags, body) of the records in data[start:end]."""
    off = start
    while off + 8 <= end:
        rtype, flags, size = struct.unpack_from("<HHI", data, off)
        if size < 8 or size % 8 or off + size > end:
            raise BadRecord("bad or truncated record at offset %d" % off)
        if rtype in REC_TYPES and size < REC_TYPES[rtype][1]:
            raise BadRecord("corrupt record at offset %d: %s record of %d bytes is shorter "
                            "than its fixed part (%d bytes)"
                            % (off, REC_NAMES[rtype], size, REC_TYPES[rtype][1]))
        yield off, rtype, flags, data[off + 8:off + size]
        off += size


def _uleb(data, i, end):
    """A LEB128 number at data[i] within end (packed.h: at most 10 bytes); (value, next)."""
    x = shift = 0
    while True:
        if i >= end:
            raise BadRecord("packed event runs past the end of the run")
        b = data[i]
        i += 1
        x |= (b & 0x7F) << shift
        if not b & 0x80 or shift >= 63:
            return x & U64, i
        shift += 7


def packed_events(body, off):
    """The (flags, body) of the CT_REC_EVENT records a CT_REC_EVENTS body (after its
    8-byte header) stands for, in order (include/cumtrace/packed.h)."""
    tid, count, nbytes, _r = struct.unpack_from("<4I", body)
    if nbytes > len(body) - 16 or count == 0:
        raise BadRecord("corrupt record at offset %s: packed events: %d events in %d bytes do "
                        "not fit a record of %d bytes" % (off, count, nbytes, len(body) + 8))
    i, end = 16, 16 + nbytes
    # the fields of the event before, starting from the run's base (ct_pk_base)
    e = dict(type=2, rflags=0, rsize=80, ts=0, dur=0, ptr=0, size=0, stream=0, aux=0,
             stack=0, result=0, flags=0, api=0, op=0, kind=0, dev=0, layer=0, reserved=0, py=0)
    out = []
    for _k in range(count):
        if i >= end:
            raise BadRecord("packed event runs past the end of the run")
        mask = body[i]
        i += 1
        v, i = _uleb(body, i, end)
        e["ts"] = (e["ts"] + v) & U64
        for bit, name in ((1, "dur"), (2, "ptr"), (4, "size"), (8, "stream"), (16, "aux"),
                          (32, "stack")):
            if mask & bit:
                v, i = _uleb(body, i, end)
                if name == "ptr":  # the zigzag of the step
                    e["ptr"] = (e["ptr"] + ((v >> 1) ^ -(v & 1))) & U64
                else:
                    e[name] = v & (0xFFFFFFFF if name == "stack" else U64)
        if mask & 64:
            v, i = _uleb(body, i, end)
            if i + 3 > end:
                raise BadRecord("packed event runs past the end of the run")
            e["api"] = v & 0xFFFF
            e["op"], e["kind"], e["layer"] = body[i], body[i + 1], body[i + 2]
            i += 3
        if mask & 128:
            for name, width in (("type", 0xFFFF), ("rflags", 0xFFFF), ("rsize", 0xFFFFFFFF),
                                ("flags", 0xFFFFFFFF), ("result", 0xFFFFFFFF), ("dev", 0xFFFF)):
                v, i = _uleb(body, i, end)
                e[name] = v & width
            if i >= end:
                raise BadRecord("packed event runs past the end of the run")
            e["reserved"] = body[i]
            i += 1
            v, i = _uleb(body, i, end)
            e["py"] = v & 0xFFFFFFFF
        ev = EVENT.pack(e["ts"], e["dur"], e["ptr"], e["size"], e["stream"], e["aux"], tid,
                        e["stack"], e["result"] - ((e["result"] & 0x80000000) << 1), e["flags"],
                        e["api"], e["op"], e["kind"], e["dev"] - ((e["dev"] & 0x8000) << 1),
                        e["layer"], e["reserved"])
        if e["rsize"] == 88:
            ev += struct.pack("<II", e["py"], 0)
        out.append((e["rflags"], ev))
    if i != end:
        raise BadRecord("corrupt record at offset %s: packed events: %d bytes left after the "
                        "run's %d events" % (off, end - i, count))
    return out


def _expand_events(off, rtype, flags, body):
    if rtype != REC_EVENTS:
        yield off, rtype, flags, body
        return
    for k, (eflags, ebody) in enumerate(packed_events(body, off)):
        yield "%s#%d" % (off, k), 2, eflags, ebody


def records(data, expand=True):
    """Yield (offset, type, flags, body) for every record of a dump in file
    order; with expand, the records inside each CT_REC_ZSTD take its place,
    their offset given as "OUTER+INNER" (a str), and the events of each
    CT_REC_EVENTS take its place as CT_REC_EVENT records ("OFFSET#K"). A bad
    or truncated record ends the walk with BadRecord."""
    if data[:8] != b"CUMTRACE":
        raise BadRecord("not a cumtrace dump (bad magic)")
    start = struct.unpack_from("<H", data, 10)[0]
    for off, rtype, flags, body in _walk(data, start, len(data)):
        if not expand:
            yield off, rtype, flags, body
            continue
        if rtype != REC_ZSTD:
            yield from _expand_events(off, rtype, flags, body)
            continue
        raw_size, frame_size = struct.unpack_from("<II", body)
        if raw_size > ZSTD_RAW_MAX or 8 + frame_size > len(body):
            raise BadRecord("bad zstd record at offset %d" % off)
        raw = zstd_decompress(body[8:8 + frame_size], raw_size)
        for ioff, itype, iflags, ibody in _walk(raw, 0, len(raw)):
            yield from _expand_events("%d+%d" % (off, ioff), itype, iflags, ibody)


_api_names = None


def api_names():
    """The API names of format.h's CT_API_LIST by id; none (api<N> placeholders) when
    the list cannot be read."""
    global _api_names
    if _api_names is None:
        try:
            text = open(FORMAT_H).read()
            body = text.split("#define CT_API_LIST(X)")[1].split("enum ct_api")[0]
            _api_names = re.findall(r"X\((\w+), \w+\)", body)
        except (OSError, IndexError):
            _api_names = []
    return _api_names


def api_name(api):
    names = api_names()
    return names[api] if api < len(names) else "api%d" % api


def framework_events(data):
    """The framework events of a dump in file order, each a dict: action ("alloc",
    "free_requested", ..., "oom": the API name without "torch_"), ts, ptr, size,
    stream, device, tid, pool ((a, b), or None without one), stack (native stack id,
    0 = none), ips (its frames), py (Python frames, innermost first, as (file,
    function, line)). Stacks are resolved after the whole dump is read."""
    events, stacks, pystacks, pystrings = [], {}, {}, {}
    for _off, rtype, flags, body in records(data):
        if rtype == 2:
            f = EVENT.unpack_from(body)
            if f[14] != LAYER_FRAMEWORK:
                continue
            py = struct.unpack_from("<I", body, EVENT.size)[0] if flags & EVENT_F_PYSTACK else 0
            events.append(dict(action=api_name(f[10]).replace("torch_", "", 1), ts=f[0],
                               ptr=f[2], size=f[3], stream=f[4], device=f[13], tid=f[6],
                               pool=((f[5] >> 32, f[5] & 0xffffffff) if f[9] & FW_F_POOL
                                     else None),
                               stack=f[7], pystack=py, kind=f[12]))
        elif rtype == 3:
            sid, depth = struct.unpack_from("<IH", body)
            stacks[sid] = list(struct.unpack_from("<%dQ" % depth, body, 8))
        elif rtype == 11:
            pid, depth = struct.unpack_from("<IH", body)
            pystacks[pid] = [struct.unpack_from("<IIi", body, 8 + 12 * i) for i in range(depth)]
        elif rtype == 12:
            sid, n = struct.unpack_from("<II", body)
            pystrings[sid] = body[8:8 + n].split(b"\0")[0].decode(errors="replace")
    for e in events:
        e["ips"] = stacks.get(e["stack"], [])
        e["py"] = [(pystrings.get(fi), pystrings.get(fn), line)
                   for fi, fn, line in pystacks.get(e.pop("pystack"), [])]
    return events


def main():
    args = sys.argv[1:]
    stats = "--stats" in args
    args = [a for a in args if a != "--stats"]
    if len(args) != 1:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        sys.exit(2)
    data = open(args[0], "rb").read()
    count = Counter()
    try:
        for off, rtype, flags, body in records(data, expand=_load_libzstd() or
                                               bool(shutil.which("zstd"))):
            count[REC_NAMES.get(rtype, rtype)] += 1
            if stats:
                continue
            show(off, rtype, flags, body)
    except BadRecord as e:
        print("ctdump: %s" % e, file=sys.stderr)
    if stats:
        for k, v in sorted(count.items(), key=lambda kv: str(kv[0])):
            print(f"{k} {v}")


def show(off, rtype, flags, body):
    name = REC_NAMES.get(rtype, f"type{rtype}")
    off = f"{off:>10}"
    if rtype == REC_NUM["event"]:
        (ts, dur, ptr, size, stream, aux, tid, stack, result, _api_flags, api, op_kind, kind_,
         dev, layer, _r) = EVENT.unpack_from(body)
        if layer == LAYER_FRAMEWORK:
            pool = f"({aux >> 32},{aux & 0xffffffff})" if _api_flags & FW_F_POOL else "none"
            print(f"{off} framework ts={ts} {api_name(api)} ptr={ptr:#x} size={size} "
                  f"stream={stream:#x} dev={dev} pool={pool} tid={tid} stack={stack}")
            return
        print(f"{off} event ts={ts} dur={dur} api={api} op={op_kind} kind={kind_} "
              f"ptr={ptr:#x} size={size} stream={stream:#x} tid={tid} stack={stack} "
              f"result={result} dev={dev}" + (" signal" if flags & 0x0002 else ""))
    elif rtype == REC_NUM["stack"]:
        sid, depth = struct.unpack_from("<IH", body)
        ips = struct.unpack_from(f"<{depth}Q", body, 8)
        print(f"{off} stack id={sid} depth={depth} " + " ".join(f"{i:#x}" for i in ips[:6]))
    elif rtype == REC_NUM["module"]:
        base, lo, hi, ts, blen, plen = struct.unpack_from("<4QHH", body)
        path = body[40 + blen:40 + blen + plen].split(b"\0")[0].decode(errors="replace")
        print(f"{off} module base={base:#x} {lo:#x}-{hi:#x} build_id={body[40:40+blen].hex()} {path}")
    elif rtype == REC_NUM["process"]:
        pid, ppid = struct.unpack_from("<II", body)
        strings = body[32:].split(b"\0")
        print(f"{off} process pid={pid} ppid={ppid} " +
              " ".join(s.decode(errors="replace") for s in strings if s))
    elif rtype == REC_NUM["symbols"]:
        naddrs, nframes, slen = struct.unpack_from("<III", body)
        strings = body[16 + 16 * (naddrs + nframes):][:slen]
        fn = struct.unpack_from("<I", body, 16 + 16 * naddrs)[0] if nframes else 0xffffffff
        first = strings[fn:].split(b"\0")[0].decode(errors="replace") if fn < slen else "-"
        print(f"{off} symbols addresses={naddrs} frames={nframes} strings={slen} first={first}")
    elif rtype == REC_NUM["drops"]:
        ts, n, tid = struct.unpack_from("<QQI", body)
        print(f"{off} drops ts={ts} count={n} tid={tid}" +
              (" in-signal-handlers" if flags & 0x0001 else ""))
    elif rtype == REC_NUM["meminfo"]:
        ts, call_ts, free, total, tid, dev = struct.unpack_from("<4QIh", body)
        print(f"{off} meminfo ts={ts} call_ts={call_ts} tid={tid} dev={dev} "
              f"free={free} total={total}")
    elif rtype == REC_NUM["mark"]:
        ts, aux, tid, kind, nlen = struct.unpack_from("<QQIHH", body)
        text = body[24:24 + nlen].split(b"\0")[0].decode(errors="replace")
        kinds = ("instant", "push", "pop", "start", "end", "step", "exit")
        kname = kinds[kind] if kind < len(kinds) else f"kind{kind}"
        extra = ""
        if kname == "step":
            extra = " source=" + {1: "explicit", 2: "optimizer"}.get(aux, str(aux))
        elif kname in ("start", "end"):
            extra = f" range={aux}"
        print(f"{off} mark ts={ts} {kname} tid={tid} name={text!r}{extra}")
    elif rtype == REC_NUM.get("memsample", -1):
        (ts, free, total, pr, prh, pu, puh, gu, guh, gr, grh, tid, dev, why, npools,
         mflags) = struct.unpack_from("<11QIhBBI", body)
        whys = {1: "first", 2: "sync", 3: "exit"}
        print(f"{off} memsample ts={ts} {whys.get(why, why)} tid={tid} dev={dev} free={free} total={total} "
              f"pools={npools} pool_reserved={pr} pool_reserved_high={prh} pool_used={pu} "
              f"pool_used_high={puh} graph_used={gu} graph_used_high={guh} graph_reserved={gr} "
              f"graph_reserved_high={grh} flags={mflags:#x}")
    elif rtype == REC_NUM.get("counter", -1):
        ts, value, tid, dev, nlen = struct.unpack_from("<QQIhH", body)
        text = body[24:24 + nlen].split(b"\0")[0].decode(errors="replace")
        print(f"{off} counter ts={ts} {text}={value} dev={dev} tid={tid}")
    elif rtype == REC_ZSTD:
        raw_size, frame_size = struct.unpack_from("<II", body)
        print(f"{off} zstd raw={raw_size} frame={frame_size} (not expanded: no libzstd.so.1 "
              "or zstd command here)")
    else:
        print(f"{off} {name} size={len(body) + 8}")


if __name__ == "__main__":
    main()
