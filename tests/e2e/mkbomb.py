"""Write a "zstd bomb": a small dump whose compressed runs (CT_REC_ZSTD) hold
millions of events, for the analyzer's memory bounds (t_bomb.sh).

  mkbomb.py OUT EVENTS PATTERN BUFFER_MB

The process record says setting.buffer_mb=BUFFER_MB (the reader sizes its
reorder window from it). There is no BATCH record, so nothing leaves the
reorder window before it is full. PATTERN:
  same      one thread allocates the same address again and again
  reverse   one thread; every second event is older than the one before it
            (out of the thread's order: the reorder window's heap)
  threads   each event from a new thread id (the window's per-thread queues)
Prints the number of events and the file size."""
import ctypes
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bin"))
import ctdump  # noqa: E402

RAW_MAX = ctdump.ZSTD_RAW_MAX


def rec(rtype, payload):
    size = 8 + len(payload)
    pad = -size % 8
    return struct.pack("<HHI", rtype, 0, size + pad) + payload + b"\0" * pad


def event(ts, tid, ptr):
    # ts dur ptr size stream aux | tid stack_id result flags | api op kind device layer pad
    return rec(2, ctdump.EVENT.pack(ts, 1, ptr, 256, 0, 0, tid, 0, 0, 0, 1, 1, 1, 0, 1, 0))


def compress(lib, raw):
    cap = lib.ZSTD_compressBound(len(raw))
    buf = ctypes.create_string_buffer(cap)
    n = lib.ZSTD_compress(buf, cap, raw, len(raw), 9)
    if lib.ZSTD_isError(n):
        sys.exit("mkbomb: zstd compression failed")
    return rec(9, struct.pack("<II", len(raw), n) + buf.raw[:n])


def main():
    if len(sys.argv) != 5 or sys.argv[3] not in ("same", "reverse", "threads"):
        sys.exit(__doc__)
    out, n, pattern, mb = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    lib = ctdump._load_libzstd()
    if not lib:
        sys.exit("mkbomb: no libzstd")
    lib.ZSTD_compressBound.restype = ctypes.c_size_t
    lib.ZSTD_compressBound.argtypes = [ctypes.c_size_t]
    lib.ZSTD_compress.restype = ctypes.c_size_t
    lib.ZSTD_compress.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p,
                                  ctypes.c_size_t, ctypes.c_int]
    strings = b"setting.buffer_mb=%d\0" % mb
    body = [b"CUMTRACE" + struct.pack("<HHI", 1, 16, 0),
            rec(1, struct.pack("<IIQQII", 4242, 1, 0, 0, 1, 0) + strings)]
    unit = {"same": event(1000, 7, 0x10000),
            "reverse": event(2000, 7, 0x10000) + event(1000, 7, 0x10000)}.get(pattern)
    per = RAW_MAX // len(event(0, 0, 0))
    done = 0
    while done < n:
        k = min(per, n - done)
        if pattern == "threads":
            raw = b"".join(event(1000, 100 + done + i, 0x10000 + 256 * (done + i)) for i in range(k))
        else:
            k -= k % (len(unit) // len(event(0, 0, 0)))
            raw = unit * (k * len(event(0, 0, 0)) // len(unit))
        body.append(compress(lib, raw))
        done += k
    data = b"".join(body)
    with open(out, "wb") as f:
        f.write(data)
    print("events %d bytes %d" % (n, len(data)))


main()
