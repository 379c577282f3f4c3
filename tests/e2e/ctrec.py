"""Tiny dump walker for tests: ctrec.py count TYPE DUMP prints how many records of TYPE."""
import struct
import sys

def records(path):
    d = open(path, "rb").read()
    o = 16
    while o + 8 <= len(d):
        t, f, sz = struct.unpack_from("<HHI", d, o)
        if sz < 8:
            break
        yield t, f, d[o:o + sz]
        o += sz

if sys.argv[1] == "count":
    print(sum(1 for t, f, r in records(sys.argv[3]) if t == int(sys.argv[2])))
