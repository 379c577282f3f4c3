"""Tiny dump walker for tests (bin/ctdump.py decodes the records):
  ctrec.py count TYPE DUMP   how many records of TYPE, those inside compressed runs included
  ctrec.py outer TYPE DUMP   how many records of TYPE stand in the file itself"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bin"))
import ctdump  # noqa: E402

data = open(sys.argv[3], "rb").read()
want = int(sys.argv[2])
if sys.argv[1] in ("count", "outer"):
    recs = ctdump.records(data, expand=sys.argv[1] == "count")
    print(sum(1 for _, t, _, _ in recs if t == want))
else:
    sys.exit(__doc__)
