"""Tiny dump walker for tests: ctrec.py count TYPE DUMP prints how many records of TYPE
(records inside compressed runs included: scripts/ctdump.py expands them)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import ctdump  # noqa: E402

if sys.argv[1] == "count":
    data = open(sys.argv[3], "rb").read()
    print(sum(1 for _, t, _, _ in ctdump.records(data) if t == int(sys.argv[2])))
