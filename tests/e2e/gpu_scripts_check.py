"""tests/e2e/t_gpu_scripts.sh: a dry run of the GPU kit's cost scripts (tests/gpu/fw_selftime.py,
tests/gpu/fw_overhead_ab.py, tests/gpu/fw_overhead_pair.py) on the fake CUDA runtime, so that a script's own bug does not cost a
device session. Their children's training loop (fw_overhead.MODEL, torch) is replaced by a loop
of cudaMalloc/cudaFree pairs through ctypes from a few Python lines, and `torch` by the stand-in
in tests/e2e/gpudry (synchronize and _record_memory_history, doing nothing). What the scripts themselves do (children, environments,
the shim's lines, the ratios, the printing) is theirs, unchanged.

usage: gpu_scripts_check.py selftime|ab|pair KIT OUT
Prints the script's output; exits 1 with a line "FAIL: ..." when a line it must print is missing.
"""
import contextlib
import io
import json
import os
import re
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "gpu"))
import fw_overhead  # noqa: E402

STEP = r'''
import ctypes
_lib = ctypes.PyDLL("libcudart.so.13")
_p = ctypes.c_void_p()
def _a():
    _lib.cudaMalloc(ctypes.byref(_p), 4096); _lib.cudaFree(_p)
def _b():
    _lib.cudaMalloc(ctypes.byref(_p), 8192); _lib.cudaFree(_p)
def step():
    for _ in range(10):
        _a()
        _b()
'''


def fail(msg, out):
    print(out)
    print("FAIL: " + msg)
    sys.exit(1)


def main():
    what, kit, out = sys.argv[1:4]
    os.environ["PYTHONPATH"] = os.path.join(here, "gpudry")
    os.environ["LD_LIBRARY_PATH"] = os.path.join(kit, "lib")
    if what == "selftime":
        import fw_selftime as m
        sys.argv = ["fw_selftime.py", "--kit", kit, "--out", out, "--modes", "async", "--steps", "200"]
    elif what == "pair":
        import fw_overhead_pair as m
        sys.argv = ["fw_overhead_pair.py", "--kit", kit, "--out", out, "--modes", "async,default", "--history",
                    "--seconds", "1", "--warmup-seconds", "0.2", "--block-seconds", "0.02"]
    else:
        import fw_overhead_ab as m
        sys.argv = ["fw_overhead_ab.py", "--kit", kit, "--out", out, "--modes", "async", "--rounds", "3",
                    "--chunk-seconds", "0.2", "--warmup-seconds", "0.1", "--preroll-seconds", "0.05"]
    child = "CHILD_TORCH" if what == "pair" else "CHILD"
    assert fw_overhead.MODEL in getattr(m, child)
    setattr(m, child, getattr(m, child).replace(fw_overhead.MODEL, STEP))
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = m.main()
    text = buf.getvalue()
    num = r"[0-9.]+"
    if what == "selftime":
        need = [r"^async +untraced +%s$" % num,
                r"^async +(on|off) +%s +%s +\d+ \(\d+, \d+, \d+\) +\d+ +%s +%s%%" % (num, num, num, num),
                r"^async +(on|off) +parts: \d+ cache hits .*, \d+ with no frame, \d+ by code pointers alone, \d+ found in the memo(, \d+ not walked)?$",
                r"^async +(on|off) +steady: [1-9]\d* of \d+ calls \(%s%%\), \d+ ns a call" % num,
                r"^async +(on|off) +steady apart: \d+ with Python frames, \d+ ns a call \(\d+, \d+, \d+\); \d+ "
                r"without \(autograd threads\), \d+ ns a call \(\d+, \d+, \d+\)$",
                r"^async +(on|off) +clock reads \([^)]+\) \d+ ns each: the steady call less eight of them "
                r"\d+ ns, %s%% of the untraced step; thread state \S" % num,
                r"^async +(on|off) +timed steps: "]
        for pat in need:
            if len(re.findall(pat, text, re.M)) < (1 if "untraced" in pat else 2):
                fail("no line matches %r for each configuration" % pat, text)
        raw = json.loads(re.search(r"^RAW (.*)$", text, re.M).group(1))
        for cfg in ("on", "off"):
            r = raw["async"][cfg]
            if not (r["steady"][0] > 0 and r["memo"] > 0 and r["self"][0] >= r["steady"][0]):
                fail("%s: steady %s, memo %s, calls %s" % (cfg, r["steady"], r["memo"], r["self"][0]), text)
            # the steady calls apart add up to them (the stand-in's loop runs on one Python thread)
            if not (r["framed"][0] + r["framed"][5] == r["steady"][0] and r["framed"][0] > 0):
                fail("%s: steady %s, apart %s" % (cfg, r["steady"], r["framed"]), text)
        if rc != 0:
            fail("exit %r" % rc, text)
    elif what == "pair":
        ratio = r"%s \[%s, %s\]" % (num, num, num)
        for mode in ("async", "default"):
            for layer, goal in (("off", "0.99"), ("on", "0.97")):
                if not re.search(r"^%s kit %s +\d+ pairs of \d+-step blocks, untraced %s steps/s: traced/untraced %s, "
                                 r"less the spill-over %s (PASS|FAIL|INCONCLUSIVE) \(goal %s\) \| added per step -?%s us "
                                 r"\[-?%s, -?%s\] \| pairs' median deviation %s \| paused block after a traced one / "
                                 r"after a paused one: %s \(\d+, \d+ blocks\)$"
                                 % (mode, layer, num, ratio, ratio, goal, num, num, num, num, num), text, re.M):
                    fail("no steps/s line for %s %s" % (mode, layer), text)
        if not re.search(r"^default history +\d+ pairs of \d+-step blocks, untraced %s steps/s: traced/untraced %s"
                         r", less the spill-over %s \| added per step -?%s us" % (num, ratio, ratio, num), text, re.M):
            fail("no line for torch's history in the default mode", text)
        if re.search(r"^async history", text, re.M):
            fail("torch's history in the cudaMallocAsync mode, which refuses it", text)
        if len(re.findall(r"^\S+ \S+( \S+)? +steps per CPU second traced/untraced: main thread %s, process "
                          r"\(every thread, the writer's too\) %s(, steady blocks %s \(\d+\))?$"
                          % (ratio, ratio, ratio), text, re.M)) != 5:
            fail("not five CPU lines", text)
        if len(re.findall(r"^async kit on: torch's allocator gives the framework layer nothing to attach to", text,
                          re.M)) != 1:
            fail("no note that the layer has nothing to attach to in the cudaMallocAsync mode", text)
        raws = re.findall(r"^RAW (\S+) (.*)$", text, re.M)
        if sorted(k for k, _ in raws) != ["async/kit/off", "async/kit/on", "default/history", "default/kit/off",
                                          "default/kit/on"]:
            fail("RAW lines: %s" % [k for k, _ in raws], text)
        for k, v in raws:
            rows = json.loads(v)["rows"]
            if len(rows) < 10 or any(len(r) != 7 or min(r[:4]) <= 0 or r[4] not in (0, 1) or min(r[5:]) < 0
                                     for r in rows):
                fail("%s: rows %s" % (k, rows[:3]), text)
        if rc not in (0, 1):
            fail("exit %r" % rc, text)
    else:
        ratio = r"%s: %s \[%s, %s\]" % (num, num, num, num)
        if not re.search(r"^async +untraced %s \| on %s (PASS|FAIL|INCONCLUSIVE) \(goal 0\.97\) \| off %s "
                         r"(PASS|FAIL|INCONCLUSIVE) \(goal 0\.99\) \| chunk spread " % (num, ratio, ratio), text, re.M):
            fail("no steps/s line", text)
        if not re.search(r"^async +main thread, steps per CPU second: untraced %s \| on %s \| off %s \| chunk "
                         r"spread " % (num, ratio, ratio), text, re.M):
            fail("no CPU line", text)
        for tag in ("RAW", "RAWCPU"):
            raw = json.loads(re.search(r"^%s async (.*)$" % tag, text, re.M).group(1))
            if sorted(raw) != ["off", "on", "untraced"] or any(len(v) != 3 or min(v) <= 0 for v in raw.values()):
                fail("%s: %s" % (tag, raw), text)
        if rc not in (0, 1):  # 1: a goal not met, which on this VM proves nothing
            fail("exit %r" % rc, text)
    print(text)
    print("ok: %s" % what)


if __name__ == "__main__":
    main()
