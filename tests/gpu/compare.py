#!/usr/bin/env python3
"""Turn the raw results of scripts/gpu-validate.sh into one table.

usage: compare.py RAW_DIR RESULT_DIR [FORMAT_H]

RAW_DIR holds, per step TAG: TAG.step (tag, rc, seconds, status), TAG.out and TAG.err
(the step's stdout and stderr), TAG.<pid>.dump (traced runs), TAG.report-CMD.out
(cumtrace-report CMD --format json on that dump) and TAG.sanlog (compute-sanitizer's
log). Writes RESULT_DIR/gpu-table.txt and RESULT_DIR/gpu-results.json, prints the table.

Expected values come from the programs' own GROUND_TRUTH lines (or, in the sanitizer
rows, from compute-sanitizer); the cumtrace column comes from cumtrace-report's JSON,
or, when the analyzer is missing or failed, from this file's own decoder of the dump
(include/cumtrace/format.h), marked "(raw)". Match: yes (exact), ~ (within the stated
tolerance), no, n/a (no data: the step failed, was skipped, or the comparison does not
apply), info (reported, not judged).
"""
import glob
import json
import os
import re
import struct
import sys
import textwrap
from collections import Counter, defaultdict

KINDS = ["device", "host_pinned", "host_registered", "managed", "vmm_physical",
         "vmm_reserved", "vmm_mapped"]
DEVICE_BYTES_KINDS = ("device", "vmm_physical")  # what cumtrace-report's peak counts
# address space, never memory: in cumtrace's leaks a reservation, and a mapping of a live allocation,
# are attributes of that allocation (issue 19), not leaks of their own
ADDRESS_KINDS = ("vmm_reserved", "vmm_mapped")
C_PROGRAMS = ["leak_malloc", "leak_pitch", "leak_async", "leak_host", "leak_managed",
              "leak_vmm", "clean"]
CUDARTS = ["shared", "static"]
TORCH_MODES = ["default", "expandable", "async", "nocache"]
MIB = 1 << 20
# Without caching, torch's cuBLAS and cuBLASLt workspaces are live at exit besides the
# tensors train.py counts (CUBLAS_WORKSPACE_CONFIG=:4096:8 is 32 MiB each).
WORKSPACE_SLACK = 128 * MIB

# What compute-sanitizer's documentation says memcheck's leak check covers: "device side
# allocations that have not been freed by the time the context is destroyed", tracked
# for allocations made with the CUDA driver or runtime APIs. Host memory (pinned or
# registered) is not device memory, but the 2025.3 run on the H200 (2026-12-02) showed
# it reports cudaMallocHost, cudaHostAlloc and cudaHostRegister leaks too. The
# documentation does not say whether pool (stream-ordered), managed and VMM allocations
# count: the run measures it.
SANITIZER_DOC = {
    "device": "yes (cudaMalloc/cudaMallocPitch/cudaMalloc3D)",
    "device (cudaMallocAsync)": "unknown (stream-ordered pool)",
    "host_pinned": "unknown (host memory; reported in the 2025.3 run)",
    "host_registered": "unknown (host memory; reported in the 2025.3 run)",
    "managed": "unknown",
    "vmm_physical": "unknown",
    "vmm_reserved": "unknown (address space, not memory)",
    "vmm_mapped": "unknown",
}


def coverage_class(kind, api):
    """Kinds, with pool allocations told apart from plain device memory."""
    return "device (cudaMallocAsync)" if kind == "device" and "Async" in (api or "") else kind


# ---- reading the raw directory ------------------------------------------------------

class Raw:
    def __init__(self, d):
        self.d = d
        self.steps = {}
        for f in glob.glob(os.path.join(d, "*.step")):
            try:
                tag, rc, secs, status = open(f).read().rstrip("\n").split("\t")[:4]
                self.steps[tag] = {"rc": None if rc == "skipped" else int(rc),
                                   "secs": float(secs), "status": status}
            except (ValueError, OSError):
                continue
        self._gt = {}
        self._view = {}

    def path(self, tag, suffix):
        return os.path.join(self.d, tag + suffix)

    def text(self, tag, suffix):
        try:
            with open(self.path(tag, suffix), errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def rc(self, tag):
        s = self.steps.get(tag)
        return None if s is None else s["rc"]

    def secs(self, tag):
        s = self.steps.get(tag)
        return None if s is None else s["secs"]

    def status(self, tag):
        s = self.steps.get(tag)
        if s is None:
            return "not run"
        if s["status"] != "ran":
            return s["status"]
        return f"rc {s['rc']}"

    def gt(self, tag):
        if tag not in self._gt:
            g = None
            for line in self.text(tag, ".out").splitlines():
                if line.startswith("GROUND_TRUTH "):
                    try:
                        g = json.loads(line[len("GROUND_TRUTH "):])
                    except ValueError:
                        pass
            self._gt[tag] = g
        return self._gt[tag]

    def dump(self, tag):
        g = self.gt(tag)
        if g and "pid" in g:
            p = self.path(tag, f".{g['pid']}.dump")
            if os.path.exists(p):
                return p
        cands = sorted(glob.glob(self.path(tag, ".*.dump*")), key=os.path.getsize, reverse=True)
        return cands[0] if cands else None

    def report(self, tag):
        """cumtrace-report's JSON for a traced tag (every subcommand prints the whole
        document; the leaks one is preferred, then peak, summary)."""
        for cmd in ("leaks", "peak", "summary"):
            t = self.text(tag, f".report-{cmd}.out")
            if self.rc(f"{tag}.report-{cmd}") == 0 and t.strip():
                try:
                    return json.loads(t)
                except ValueError:
                    continue
        return None

    def view(self, tag):
        """(source, data): the analyzer's JSON ("report"), else the raw decoder's ("raw");
        ("none", an empty analysis) when the run succeeded but left no dump, which the
        shim creates at the first call it traces: it saw nothing; else (None, None)."""
        if tag not in self._view:
            rep = self.report(tag)
            dump = self.dump(tag)
            if rep is not None:
                self._view[tag] = ("report", rep)
            elif dump:
                try:
                    self._view[tag] = ("raw", decode_dump(dump))
                except Exception:  # corrupt dump: no data
                    self._view[tag] = (None, None)
            elif self.rc(tag) == 0 and self.gt(tag):
                self._view[tag] = ("none", empty_analysis())
            else:
                self._view[tag] = (None, None)
        return self._view[tag]

    def raw_decode(self, tag):
        dump = self.dump(tag)
        if not dump:
            return None
        try:
            return decode_dump(dump)
        except Exception as e:
            return {"error": str(e)}


# ---- an independent decoder of the dump (include/cumtrace/format.h) ----------------

EVENT = struct.Struct("<6Q2IiIHBBhBB")
OP_ALLOC, OP_FREE, OP_DEVICE_RESET = 1, 2, 7
OP_VA_RESERVE, OP_VA_FREE, OP_PHYS_CREATE, OP_PHYS_RELEASE = 12, 13, 14, 15
OP_MAP, OP_UNMAP, OP_CTX_DESTROY = 16, 17, 18
LAYER_NAMES = {0: "none", 1: "runtime", 2: "driver", 3: "cupti", 4: "user"}
KIND_BY_ID = {1: "device", 2: "host_pinned", 3: "host_registered", 4: "managed",
              5: "vmm_physical", 6: "vmm_reserved", 7: "vmm_mapped"}
_API_NAMES = None


def api_names():
    """The CT_API_LIST of format.h, in order (the API ids of the dump)."""
    global _API_NAMES
    if _API_NAMES is None:
        here = os.path.dirname(os.path.abspath(__file__))
        cands = [os.environ.get("CUMTRACE_FORMAT_H", ""),
                 os.path.join(here, "..", "..", "include", "cumtrace", "format.h"),
                 os.path.join(here, "..", "include", "cumtrace", "format.h")]
        names = []
        for c in cands:
            if c and os.path.exists(c):
                text = open(c).read()
                m = re.search(r"#define CT_API_LIST\(X\)(.*?)\nenum ct_api", text, re.S)
                if m:
                    names = re.findall(r"X\((\w+),\s*\w+\)", m.group(1))
                    break
        _API_NAMES = names
    return _API_NAMES


def api_name(i):
    n = api_names()
    return n[i] if i < len(n) else f"api{i}"


def ns_of_kind(kind):
    if kind == "host_registered":
        return "reg"
    if kind == "vmm_physical":
        return "phys"
    if kind == "vmm_reserved":
        return "res"
    return "uva"


def ctdump():
    """bin/ctdump.py (the dump walker that expands compressed records): in the
    repository two levels up, in the GPU kit one level up from src/."""
    here = os.path.dirname(os.path.abspath(__file__))
    for d in (os.path.join(here, "..", "..", "bin"), os.path.join(here, "..")):
        if os.path.exists(os.path.join(d, "ctdump.py")) and d not in sys.path:
            sys.path.insert(0, d)
    import ctdump as mod
    return mod


def decode_dump(path):
    """Leaks, peak and per-kind statistics of a dump, computed the way
    cumtrace-report's model does (analyzer/model/model.c), as a cross-check."""
    data = open(path, "rb").read()
    if data[:8] != b"CUMTRACE":
        raise ValueError("not a cumtrace dump (bad magic)")
    events, truncated, end_seen, pid = [], False, False, None
    layers = Counter()
    order = 0
    try:
        for _off, rtype, _flags, body in ctdump().records(data):
            if rtype == 2 and len(body) >= 72:
                ev = EVENT.unpack_from(body)
                events.append((ev, order))
                layers[LAYER_NAMES.get(ev[14], f"layer{ev[14]}")] += 1
                order += 1
            elif rtype == 1 and len(body) >= 8:
                pid = struct.unpack_from("<I", body)[0]
            elif rtype == 7:
                end_seen = True
    except ctdump().BadRecord:
        truncated = True
    except ctdump().ZstdUnavailable as e:
        raise ValueError(str(e))
    events.sort(key=lambda e: (e[0][0], e[1]))

    live = {}  # (ns, ptr) -> [kind, size, site key]
    kst = {k: {"allocations": 0, "frees": 0, "bytes_allocated": 0, "peak_bytes": 0,
               "live_bytes_at_end": 0} for k in KINDS}
    apis = defaultdict(lambda: {"calls": 0, "failures": 0, "bytes": 0, "time_ns": 0})
    leaks = defaultdict(lambda: [0, 0])  # (kind, api, stack, device, reason) -> [count, bytes]
    tot = {"allocations": 0, "frees": 0, "failed_calls": 0, "unmatched_frees": 0}
    dev_live = dev_peak = 0

    def add(kind, size, sign):
        nonlocal dev_live, dev_peak
        k = kst[kind]
        k["live_bytes_at_end"] += sign * size
        k["peak_bytes"] = max(k["peak_bytes"], k["live_bytes_at_end"])
        if kind in DEVICE_BYTES_KINDS:
            dev_live += sign * size
            dev_peak = max(dev_peak, dev_live)

    def remove(key, how, reason=""):
        kind, size, site = live.pop(key)
        add(kind, size, -1)
        if how == "free":
            kst[kind]["frees"] += 1
            tot["frees"] += 1
        elif how == "leak":
            lk = leaks[site + (reason,)]
            lk[0] += 1
            lk[1] += size

    for (ts, dur, ptr, size, _stream, _aux, _tid, stack, result, _flags, api, op, kind_id,
         dev, _layer, _r), _o in events:
        a = apis[api_name(api)]
        a["calls"] += 1
        a["time_ns"] += dur
        if result != 0:
            a["failures"] += 1
            tot["failed_calls"] += 1
            continue
        kind = KIND_BY_ID.get(kind_id)
        if op in (OP_ALLOC, OP_PHYS_CREATE, OP_VA_RESERVE, OP_MAP):
            kind = {OP_PHYS_CREATE: "vmm_physical", OP_VA_RESERVE: "vmm_reserved",
                    OP_MAP: "vmm_mapped"}.get(op, kind or "device")
            if not ptr:
                continue
            key = (ns_of_kind(kind), ptr)
            if key in live:
                remove(key, "unseen")
            live[key] = [kind, size, (kind, api_name(api), stack, dev)]
            kst[kind]["allocations"] += 1
            kst[kind]["bytes_allocated"] += size
            tot["allocations"] += 1
            a["bytes"] += size
            add(kind, size, +1)
        elif op in (OP_FREE, OP_PHYS_RELEASE, OP_VA_FREE):
            if not ptr:
                continue
            ns = {OP_PHYS_RELEASE: "phys", OP_VA_FREE: "res"}.get(op)
            if ns is None:
                ns = ns_of_kind(kind) if kind else (
                    "reg" if api_name(api) in ("cudaHostUnregister", "cuMemHostUnregister")
                    else "uva")
            if (ns, ptr) in live:
                a["bytes"] += live[(ns, ptr)][1]
                remove((ns, ptr), "free")
            else:
                tot["unmatched_frees"] += 1
        elif op == OP_UNMAP:
            p, end, first = ptr, ptr + max(size, 1), True
            while p < end and ("uva", p) in live:
                sz = live[("uva", p)][1]
                remove(("uva", p), "free")
                first = False
                if not sz:
                    break
                p += sz
            if first:
                tot["unmatched_frees"] += 1
        elif op in (OP_DEVICE_RESET, OP_CTX_DESTROY):
            reason = f"live at {api_name(api)}"
            for key in [k for k, v in live.items() if v[2][3] == dev]:
                remove(key, "leak", reason)
    for key in list(live):
        remove(key, "leak", "live at exit")

    sites = [{"count": c, "bytes": b, "kind": k, "api": ap, "stack_id": st, "device": d,
              "reason": r} for (k, ap, st, d, r), (c, b) in leaks.items()]
    sites.sort(key=lambda s: -s["bytes"])
    return {
        "source": "raw", "pid": pid, "truncated": truncated, "clean_exit": end_seen,
        "layers": dict(layers),
        "events": len(events), **tot,
        "leaks": {"count": sum(s["count"] for s in sites), "bytes": sum(s["bytes"] for s in sites),
                  "sites_total": len(sites), "sites": sites},
        "peak": {"bytes": dev_peak},
        "summary": {"apis": dict(apis), "kinds": kst},
    }


# ---- views of one analysis (report JSON or raw decode: same shape) -------------------

def empty_analysis():
    return {"source": "none", "events": 0, "allocations": 0, "frees": 0, "failed_calls": 0,
            "leaks": {"count": 0, "bytes": 0, "sites_total": 0, "sites": []},
            "peak": {"bytes": 0}, "summary": {"apis": {}, "kinds": {}}}


def leaks_by_kind(data):
    out = {}
    for s in (data.get("leaks") or {}).get("sites") or []:
        if s.get("kind") == "vmm_reserved":  # the decoder's own leaks (no report): address space
            continue
        c = out.setdefault(s.get("kind", "?"), [0, 0])
        c[0] += s.get("count", 0)
        c[1] += s.get("bytes", 0)
    return {k: tuple(v) for k, v in out.items() if v[0] or v[1]}


def leak_sizes(data, kinds):
    sizes = []
    for s in (data.get("leaks") or {}).get("sites") or []:
        if s.get("kind") not in kinds or not s.get("count"):
            continue
        c, b = s["count"], s["bytes"]
        sizes += [b // c] * c
    return sorted(sizes)


def sites_truncated(data):
    lk = data.get("leaks") or {}
    return lk.get("sites_total", 0) > len(lk.get("sites") or [])


def kind_stats(data, kind):
    k = ((data.get("summary") or {}).get("kinds") or {}).get(kind) or {}
    return (k.get("allocations", 0), k.get("frees", 0), k.get("peak_bytes", 0),
            k.get("live_bytes_at_end", 0))


def device_live_at_exit(data):
    return sum(kind_stats(data, k)[3] for k in DEVICE_BYTES_KINDS)


def device_peak(data):
    return (data.get("peak") or {}).get("bytes", 0)


CUBLAS_MODULES = ("libcublas.so", "libcublasLt.so")


def from_cublas(site):
    """Allocated by cuBLAS itself (its workspaces, through its own static runtime)."""
    return any(any(m in (f.get("module") or "") for m in CUBLAS_MODULES) for f in site.get("stack") or [])


def without_cublas(v):
    """(peak, live at exit, cuBLAS bytes at the peak) over device memory, cuBLAS's own sites left out."""
    pk_own, pk_lib = device_bytes_split((v.get("peak") or {}).get("sites"))
    lv_own, _ = device_bytes_split((v.get("leaks") or {}).get("sites"))
    return pk_own, lv_own, pk_lib


def device_bytes_split(sites):
    """(bytes outside cuBLAS, bytes of cuBLAS) over device-memory sites."""
    own = lib = 0
    for st in sites or []:
        if st.get("kind") not in DEVICE_BYTES_KINDS:
            continue
        if from_cublas(st):
            lib += st.get("bytes", 0)
        else:
            own += st.get("bytes", 0)
    return own, lib


def total_events(data):
    if "events" in data:
        return data["events"]
    return sum(d.get("events", 0) for d in data.get("dumps") or [])


def api_note(data, limit=5):
    if data.get("source") == "none":
        return "no dump: no call reached the shim"
    apis = (data.get("summary") or {}).get("apis") or {}
    top = sorted(apis.items(), key=lambda kv: -kv[1].get("calls", 0))[:limit]
    return ", ".join(f"{k} {v.get('calls', 0)}" for k, v in top) or "no calls seen"


# ---- formatting ----------------------------------------------------------------------

def human(n):
    if n is None:
        return "?"
    if abs(n) < 10 * 1024:
        return f"{n} B"
    if abs(n) < 10 * MIB:
        return f"{n / 1024:.1f} KiB"
    if abs(n) < 10 * 1024 * MIB:
        return f"{n / MIB:.1f} MiB"
    return f"{n / (1024 * MIB):.2f} GiB"


def nb(n):
    """Exact bytes with a readable size."""
    return "?" if n is None else f"{n} ({human(n)})"


def kinds_cell(d):
    if not d:
        return "none"
    return ", ".join(f"{k} {c}/{b}" for k, (c, b) in sorted(d.items(), key=lambda kv: KINDS.index(kv[0]) if kv[0] in KINDS else 99))


def close(exp, got, abs_tol=2 * MIB, rel_tol=0.01):
    if exp is None or got is None:
        return "n/a"
    if exp == got:
        return "yes"
    return "~" if abs(exp - got) <= max(abs_tol, rel_tol * abs(exp)) else "no"


class Table:
    def __init__(self):
        self.rows = []

    def section(self, title):
        self.rows.append({"section": title})

    def add(self, check, expected, got, match, note=""):
        self.rows.append({"check": check, "expected": str(expected), "cumtrace": str(got),
                          "match": match, "note": note})

    def render(self):
        widths = {"check": 34, "expected": 44, "cumtrace": 44, "match": 5, "note": 56}
        heads = {"check": "check", "expected": "expected (ground truth / compute-sanitizer)",
                 "cumtrace": "cumtrace", "match": "match", "note": "note"}
        cols = list(widths)
        sep = "+" + "+".join("-" * (widths[c] + 2) for c in cols) + "+"

        def line(cells):
            wrapped = {c: textwrap.wrap(cells[c], widths[c], break_long_words=True,
                                        break_on_hyphens=False) or [""] for c in cols}
            n = max(len(v) for v in wrapped.values())
            out = []
            for i in range(n):
                out.append("| " + " | ".join(
                    (wrapped[c][i] if i < len(wrapped[c]) else "").ljust(widths[c]) for c in cols)
                    + " |")
            return out

        out = [sep] + line(heads) + [sep.replace("-", "=")]
        for r in self.rows:
            if "section" in r:
                out.append(sep)
                out.append("| " + ("## " + r["section"]).ljust(len(sep) - 4) + " |")
                out.append(sep)
            else:
                out += line(r)
        out.append(sep)
        return "\n".join(out)

    def counts(self):
        return Counter(r["match"] for r in self.rows if "match" in r)


# ---- compute-sanitizer ---------------------------------------------------------------

LEAK_RE = re.compile(r"Leaked ([\d,]+) bytes at (0x[0-9a-fA-F]+)")
SUM_RE = re.compile(r"LEAK SUMMARY: ([\d,]+) bytes leaked in ([\d,]+) allocation")
ERR_RE = re.compile(r"ERROR SUMMARY: (\d+) error")


def sanitizer(raw, tag):
    if raw.rc(tag) is None:
        return None
    log = raw.text(tag, ".sanlog") or raw.text(tag, ".out")
    leaks = [(int(b.replace(",", "")), a) for b, a in LEAK_RE.findall(log)]
    m = SUM_RE.search(log)
    e = ERR_RE.search(log)
    res = {"rc": raw.rc(tag), "leaks": leaks,
           "summary_bytes": int(m.group(1).replace(",", "")) if m else sum(b for b, _ in leaks),
           "summary_count": int(m.group(2).replace(",", "")) if m else len(leaks),
           "has_summary": bool(m), "errors": int(e.group(1)) if e else None,
           "ran": bool(e or m or leaks)}
    return res


# ---- the checks ----------------------------------------------------------------------

def value_cell(src, text):
    return text + {"raw": " (raw)", "none": " (no dump)"}.get(src, "")


def c_rows(raw, t, results, prog, cudart, san_seen):
    name = f"{prog}/{cudart}"
    base = f"c.{prog}.{cudart}"
    tp, tt, tr, ts, tn = (base + s for s in (".plain", ".traced", ".reset", ".san", ".sannr"))
    gp, g = raw.gt(tp), raw.gt(tt)
    src, v = raw.view(tt)
    res = results.setdefault(name, {})
    res.update({"gt": g or gp, "source": src})
    times = " ".join(f"{k} {raw.secs(x):.2f}s" for k, x in (("plain", tp), ("traced", tt))
                     if raw.secs(x) is not None)
    same = None
    if g and gp:
        strip = lambda d: {k: x for k, x in d.items() if k != "pid"}
        same = strip(g) == strip(gp)
    got_run = f"traced {raw.status(tt)}"
    if v:
        got_run += f", {total_events(v)} events"
    elif src is None:
        got_run += ", no dump" if not raw.dump(tt) else ", unreadable dump"
    ok = raw.rc(tp) == 0 and raw.rc(tt) == 0 and same is not False
    t.add(f"{name} runs", f"untraced {raw.status(tp)}", got_run,
          "yes" if ok else ("n/a" if raw.rc(tp) is None else "no"),
          (times + ("; same ground truth" if same else "; GROUND_TRUTH differs" if same is False else "")
           + ("; " + layer_note(raw, tt) if raw.dump(tt) else "")).strip("; "))
    g = g or gp
    if not g:
        t.add(f"{name} leaks by kind", "no GROUND_TRUTH", "-", "n/a", f"untraced {raw.status(tp)}")
        return
    exp_leaks = {k: (s["leaked_count"], s["leaked_bytes"]) for k, s in g["kinds"].items()
                 if s["leaked_count"] and k not in ADDRESS_KINDS}
    if not v:
        t.add(f"{name} leaks by kind", kinds_cell(exp_leaks), "no data", "n/a",
              "traced run left no readable dump")
        return
    got_leaks = leaks_by_kind(v)
    note = "no dump: no call reached the shim" if src == "none" else ""
    if cudart == "static" and total_events(v) == 0:
        note = "static cudart reaches the driver through cuGetProcAddress (README: not yet seen)"
    if sites_truncated(v):
        note += "; leak sites truncated (--top)"
    res["leaks"] = {"expected": exp_leaks, "cumtrace": got_leaks}
    t.add(f"{name} leaks by kind (count/bytes)", kinds_cell(exp_leaks),
          value_cell(src, kinds_cell(got_leaks)), "yes" if exp_leaks == got_leaks else "no", note)

    kinds = [k for k in KINDS if k in g["kinds"] or kind_stats(v, k)[0]]
    exp_k = {k: (g["kinds"][k]["allocs"], g["kinds"][k]["frees"], g["kinds"][k]["peak_bytes"])
             if k in g["kinds"] else (0, 0, 0) for k in kinds}
    got_k = {k: kind_stats(v, k)[:3] for k in kinds}
    fmt = lambda d: ", ".join(f"{k} {a}a/{f}f pk {p}" for k, (a, f, p) in d.items()) or "none"
    t.add(f"{name} allocs/frees/peak by kind", fmt(exp_k), value_cell(src, fmt(got_k)),
          "yes" if exp_k == got_k else "no")

    exp_tot = (g["peak_device_bytes"], g["allocs"], g["frees"], g["failed_calls"])
    got_tot = (device_peak(v), v.get("allocations", 0), v.get("frees", 0), v.get("failed_calls", 0))
    fmt2 = lambda x: f"dev peak {x[0]}; {x[1]} allocs, {x[2]} frees, {x[3]} failed"
    extra = []
    if v.get("unmatched_frees"):
        extra.append(f"{v['unmatched_frees']} unmatched frees")
    if v.get("double_allocations"):
        extra.append(f"{v['double_allocations']} double allocations")
    t.add(f"{name} device peak & totals", fmt2(exp_tot), value_cell(src, fmt2(got_tot)),
          "yes" if exp_tot == got_tot else "no",
          "; ".join(extra) or "peak = device + vmm_physical bytes")

    # with cudaDeviceReset before exit
    gr = raw.gt(tr)
    srcr, vr = raw.view(tr)
    if gr and vr:
        # memory only: the address kinds are attributes of their allocation (issue 19)
        exp_r = (sum(v["leaked_count"] for k, v in gr["kinds"].items() if k not in ADDRESS_KINDS),
                 sum(v["leaked_bytes"] for k, v in gr["kinds"].items() if k not in ADDRESS_KINDS))
        lk = vr.get("leaks") or {}
        got_r = (lk.get("count", 0), lk.get("bytes", 0))
        reasons = sorted({s.get("reason", "?") for s in lk.get("sites") or []})
        t.add(f"{name} leaks with cudaDeviceReset", f"{exp_r[0]}/{exp_r[1]}",
              value_cell(srcr, f"{got_r[0]}/{got_r[1]}"), "yes" if exp_r == got_r else "no",
              "reasons: " + (", ".join(reasons) or "none"))
    else:
        t.add(f"{name} leaks with cudaDeviceReset", "-" if not gr else f"{gr['leaked_count']}/{gr['leaked_bytes']}",
              "no data", "n/a", f"run {raw.status(tr)}")

    # compute-sanitizer (run with --reset, as its documentation asks)
    s = sanitizer(raw, ts)
    res["sanitizer"] = s
    if not s or not s["ran"]:
        t.add(f"{name} vs compute-sanitizer", f"sanitizer {raw.status(ts)}", "-", "n/a",
              "no sanitizer output")
    else:
        gs = raw.gt(ts) or g
        # Attribute each leak the sanitizer reports to a planted kind by its size.
        pool = [(k, b, coverage_class(k, a)) for k in KINDS if k in gs["kinds"]
                for b, a in zip(gs["kinds"][k]["leaked_sizes"], gs["kinds"][k]["leaked_apis"])]
        planted = Counter(c for _k, _b, c in pool)
        covered, covered_cls, unplanted = Counter(), Counter(), []
        for b, _addr in s["leaks"]:
            hit = next((i for i, (_k, pb, _c) in enumerate(pool) if pb == b), None)
            if hit is None:
                unplanted.append(b)
            else:
                covered[pool[hit][0]] += 1
                covered_cls[pool[hit][2]] += 1
                pool.pop(hit)
        for c, n in planted.items():
            san_seen[c][0] += covered_cls.get(c, 0)
            san_seen[c][1] += n
            san_seen[c][2].add(f"{prog}/{cudart}")
        missed = sorted({c for _k, _b, c in pool})
        exp = f"sanitizer {s['summary_count']}/{s['summary_bytes']}"
        notes = []
        if missed:
            notes.append("sanitizer silent on: " + ", ".join(missed))
        if unplanted:
            notes.append(f"sanitizer-only sizes: {unplanted[:4]}")
        sn = sanitizer(raw, tn)
        if sn and sn["ran"]:
            notes.append(f"without reset: {sn['summary_count']}/{sn['summary_bytes']}")
        if covered:
            kinds_c = sorted(covered, key=KINDS.index)
            c = sum(got_leaks.get(k, (0, 0))[0] for k in kinds_c)
            b = sum(got_leaks.get(k, (0, 0))[1] for k in kinds_c)
            sizes_ok = leak_sizes(v, kinds_c) == sorted(x for x, _ in s["leaks"] if x not in unplanted)
            notes.insert(0, "sizes " + ("equal" if sizes_ok else "differ"))
            m = "yes" if (c, b) == (s["summary_count"], s["summary_bytes"]) else "no"
            t.add(f"{name} vs compute-sanitizer", exp,
                  value_cell(src, f"{c}/{b} ({', '.join(kinds_c)})"), m, "; ".join(notes))
        elif s["summary_count"] == 0 and not exp_leaks:
            t.add(f"{name} vs compute-sanitizer", exp,
                  value_cell(src, f"{v.get('leaks', {}).get('count', 0)}/{v.get('leaks', {}).get('bytes', 0)}"),
                  "yes" if not got_leaks else "no", "negative control; " + "; ".join(notes))
        else:
            t.add(f"{name} vs compute-sanitizer", exp, value_cell(src, kinds_cell(got_leaks)),
                  "n/a", "; ".join(notes) or "nothing to compare")

    # the analyzer against this file's decoder of the same dump
    if src == "report":
        r = raw.raw_decode(tt)
        if r and "error" not in r:
            a = (leaks_by_kind(v), device_peak(v), v.get("allocations"), v.get("frees"))
            # the raw decoder lists every live block; the report counts memory only (issue 19)
            b = ({k: x for k, x in leaks_by_kind(r).items() if k not in ADDRESS_KINDS}, device_peak(r),
                 r.get("allocations"), r.get("frees"))
            t.add(f"{name} report == raw decode", "raw: " + kinds_cell(b[0]) + f"; peak {b[1]}",
                  "report: " + kinds_cell(a[0]) + f"; peak {a[1]}", "yes" if a == b else "no",
                  "" if a == b else f"allocs/frees report {a[2]}/{a[3]} raw {b[2]}/{b[3]}")


def torch_expect(mode, g):
    """(what, expected peak, expected live at exit, tolerance kind) for a train.py run."""
    if mode in ("default", "expandable"):
        return ("max_memory_reserved / memory_reserved", g["max_memory_reserved"],
                g["memory_reserved"], "close")
    if mode == "async":
        return ("max_memory_allocated / memory_allocated", g["max_memory_allocated"],
                g["memory_allocated"], "close")
    if g.get("max_memory_reserved"):
        return ("max_memory_reserved / memory_reserved", g["max_memory_reserved"],
                g["memory_reserved"], "close")
    return ("tensor bytes (torch keeps no stats without caching)", g["tensor_bytes"],
            g["tensor_bytes"], "lower")


def torch_rows(raw, t, results):
    base = {}
    for mode in TORCH_MODES:
        tp, tt = f"torch.{mode}.plain", f"torch.{mode}.traced"
        gp, g = raw.gt(tp), raw.gt(tt)
        src, v = raw.view(tt)
        results[f"torch.{mode}"] = {"plain": gp, "traced": g, "source": src}
        if not g:
            t.add(f"torch {mode} peak", "no GROUND_TRUTH", "-", "n/a",
                  f"untraced {raw.status(tp)}, traced {raw.status(tt)}")
            continue
        what, exp_peak, exp_live, how = torch_expect(mode, g)
        if not v:
            t.add(f"torch {mode} peak", nb(exp_peak), "no data", "n/a", f"traced {raw.status(tt)}")
            continue
        base[mode] = (g, v)
        peak, live = device_peak(v), device_live_at_exit(v)
        if how == "close":
            mp, ml = close(exp_peak, peak), close(exp_live, live)
        else:
            mp = "yes" if peak >= exp_peak else "no"
            ml = "yes" if live == exp_live else ("~" if exp_live <= live <= exp_live + WORKSPACE_SLACK else "no")
        note = api_note(v, 4)
        if mode == "async":
            note = f"pool reserved {human(g['max_memory_reserved'])}; " + note
        t.add(f"torch {mode} peak", nb(exp_peak) + ("" if how == "close" else " (lower bound)"),
              value_cell(src, nb(peak)), mp, f"{what.split(' / ')[0]}; " + note)
        t.add(f"torch {mode} live at exit", nb(exp_live), value_cell(src, nb(live)), ml,
              what.split(" / ")[-1] + ("" if how == "close" else "; up to +128 MiB (cuBLAS/cuBLASLt workspaces) is ~"))
        # torch's statistics leave out what cuBLAS allocates for itself (its
        # static runtime calls cuMemAlloc_v2): compare without those sites.
        pk_own, pk_lib = device_bytes_split((v.get("peak") or {}).get("sites"))
        lv_own, lv_lib = device_bytes_split((v.get("leaks") or {}).get("sites"))
        if pk_lib or lv_lib:
            if how == "close":
                mpo, mlo = close(exp_peak, pk_own), close(exp_live, lv_own)
            else:
                mpo = "yes" if pk_own >= exp_peak else "no"
                mlo = "yes" if lv_own >= exp_live else "no"
            # The rows with everything in them then differ by cuBLAS's own
            # memory alone: say so rather than call them failures.
            for row in t.rows[-2:]:
                if row.get("match") == "no" and ((row is t.rows[-2] and mpo == "yes") or
                                                 (row is t.rows[-1] and mlo == "yes")):
                    row["match"] = "info"
                    row["note"] = (row.get("note") or "") + "; all device memory: includes what cuBLAS allocates for itself (next rows)"
            t.add(f"torch {mode} peak without cuBLAS's own", nb(exp_peak), value_cell(src, nb(pk_own)), mpo,
                  f"left out: {nb(pk_lib)} live at the peak in sites inside libcublas (its workspaces)")
            t.add(f"torch {mode} live at exit without cuBLAS's own", nb(exp_live), value_cell(src, nb(lv_own)),
                  mlo, f"left out: {nb(lv_lib)} in libcublas sites")
        if gp:
            exp = f"loss {gp['last_loss']!r}, max_reserved {gp['max_memory_reserved']}"
            got = f"loss {g['last_loss']!r}, max_reserved {g['max_memory_reserved']}"
            same = gp["last_loss"] == g["last_loss"] and gp["max_memory_reserved"] == g["max_memory_reserved"]
            t.add(f"torch {mode} unchanged by shim", exp, got, "yes" if same else "no",
                  "untraced vs traced run")
            sp, st = gp.get("steps_per_s"), g.get("steps_per_s")
            if sp and st:
                r = st / sp
                t.add(f"torch {mode} speed", f"{sp:.1f} steps/s untraced", f"{st:.1f} steps/s traced",
                      "yes" if r >= 0.9 else ("~" if r >= 0.75 else "no"),
                      f"ratio {r:.3f}; yes >= 0.90, ~ >= 0.75")

    # planted leaks
    tl = "torch.nocache-leak.traced"
    g = raw.gt(tl)
    src, v = raw.view(tl)
    if g and v:
        L, N = g["leak_tensor_bytes"], g["leak_count"]
        sites = [s for s in (v.get("leaks") or {}).get("sites") or []
                 if s.get("kind") == "device" and s.get("count") and s["bytes"] == s["count"] * L]
        c, b = sum(s["count"] for s in sites), sum(s["bytes"] for s in sites)
        t.add("torch nocache + planted leak", f"{N} x {L} B = {N * L}",
              value_cell(src, f"{c} x {L} B = {b} in {len(sites)} site(s)"),
              "yes" if (c, b) == (N, N * L) else "no",
              "leak sites whose blocks are all exactly the planted size")
    else:
        t.add("torch nocache + planted leak", "-", "no data", "n/a", f"run {raw.status(tl)}")
    tl = "torch.default-leak.traced"
    g = raw.gt(tl)
    src, v = raw.view(tl)
    if g and v:
        _, live, lib = without_cublas(v)
        note = f"planted {g['leak_count']} x {g['leak_tensor_bytes']} B; without cuBLAS's own {nb(lib)}"
        if "default" in base:
            g0, v0 = base["default"]
            note += (f"; growth vs no-leak run: cumtrace {human(live - without_cublas(v0)[1])}, "
                     f"torch {human(g['memory_reserved'] - g0['memory_reserved'])}")
        t.add("torch default + planted leak, live at exit", nb(g["memory_reserved"]),
              value_cell(src, nb(live)), close(g["memory_reserved"], live), note)
    else:
        t.add("torch default + planted leak, live at exit", "-", "no data", "n/a",
              f"run {raw.status(tl)}")

    # torch.profiler while the shim traces (a CUPTI subscriber would collide)
    tp, tt = "torch.profile.plain", "torch.profile.traced"
    gp, g = raw.gt(tp), raw.gt(tt)
    err = raw.text(tt, ".err")
    cupti = sorted(set(re.findall(r"CUPTI_ERROR_\w+", err)))
    if g:
        n = g.get("profiler_cuda_events")
        exp = (f"{gp.get('profiler_cuda_events')} CUDA events untraced" if gp
               else f"untraced {raw.status(tp)}")
        got = (f"{n} CUDA events traced" if n is not None
               else "profiler error: " + str(g.get("profiler_error")))
        ok = raw.rc(tt) == 0 and n and not cupti and not g.get("profiler_error")
        note = ("CUPTI errors: " + ", ".join(cupti)) if cupti else "no CUPTI errors"
        if gp and n is not None and gp.get("profiler_cuda_events") != n:
            note += "; counts differ"
        t.add("torch.profiler under the shim", exp, got, "yes" if ok else "no", note)
        src, v = raw.view(tt)
        if v:
            pk, _, lib = without_cublas(v)
            t.add("torch.profiler run: peak", nb(g["max_memory_reserved"]),
                  value_cell(src, nb(pk)), close(g["max_memory_reserved"], pk),
                  f"max_memory_reserved, captured while the profiler runs; without cuBLAS's own {nb(lib)}")
    else:
        t.add("torch.profiler under the shim", f"untraced {raw.status(tp)}",
              f"traced {raw.status(tt)}", "n/a", ("CUPTI errors: " + ", ".join(cupti)) if cupti else "")


def framework_rows(raw, t, results):
    tp, tt = "cupy.plain", "cupy.traced"
    gp, g = raw.gt(tp), raw.gt(tt)
    src, v = raw.view(tt)
    results["cupy"] = {"plain": gp, "traced": g, "source": src}
    if g and v:
        t.add("cupy peak", nb(g["pool_total_peak"]), value_cell(src, nb(device_peak(v))),
              close(g["pool_total_peak"], device_peak(v)), "pool.total_bytes() at its largest; " + api_note(v, 3))
        t.add("cupy live at exit", nb(g["pool_total_end"]), value_cell(src, nb(device_live_at_exit(v))),
              close(g["pool_total_end"], device_live_at_exit(v)),
              f"pool.total_bytes() at the end; used_bytes() {human(g['pool_used_end'])}")
    else:
        t.add("cupy peak", "-", "no data", "n/a", f"untraced {raw.status(tp)}, traced {raw.status(tt)}")
    if gp and g:
        t.add("cupy unchanged by shim", f"result {gp['result']!r}", f"result {g['result']!r}",
              "yes" if gp["result"] == g["result"] else "no")

    for name in ("jax-noprealloc", "jax-prealloc"):
        tp, tt = f"{name}.plain", f"{name}.traced"
        gp, g = raw.gt(tp), raw.gt(tt)
        src, v = raw.view(tt)
        results[name] = {"plain": gp, "traced": g, "source": src}
        if not (g and v):
            t.add(f"{name} peak", "-", "no data", "n/a", f"untraced {raw.status(tp)}, traced {raw.status(tt)}")
            continue
        st = g.get("memory_stats") or {}
        key = next((k for k in ("peak_pool_bytes", "pool_bytes", "peak_bytes_reserved",
                                "bytes_reserved", "bytes_limit", "peak_bytes_in_use") if st.get(k)), None)
        exp = st.get(key) if key else None
        peak = device_peak(v)
        if exp is None:
            m = "n/a"
        elif peak == exp:
            m = "yes"
        elif exp <= peak <= exp + max(256 * MIB, exp // 50):
            m = "~"
        else:
            m = "no"
        t.add(f"{name} peak", nb(exp) + (f" [{key}]" if key else ""), value_cell(src, nb(peak)), m,
              f"~: up to +max(256 MiB, 2%) outside XLA's pool; in use at peak "
              f"{human(st.get('peak_bytes_in_use'))}; " + api_note(v, 3))
        live = device_live_at_exit(v)
        t.add(f"{name} live at exit", nb(exp), value_cell(src, nb(live)),
              "yes" if live == exp else "info", "XLA may release its pool at shutdown")
        if gp:
            t.add(f"{name} unchanged by shim", f"result {gp['result']!r}", f"result {g['result']!r}",
                  "yes" if gp["result"] == g["result"] else "no")


def env_rows(raw, t):
    ldd = raw.text("env.ldd-shim", ".out")
    t.add("kit: libcumtrace.so loads", "every library found",
          "missing: " + ", ".join(re.findall(r"(\S+) => not found", ldd)) if "not found" in ldd
          else (raw.status("env.ldd-shim") if not ldd else "all found"),
          "yes" if ldd and "not found" not in ldd else "no", "ldd with gpu-kit/lib")
    ldd = raw.text("env.ldd-report", ".out")
    ver = raw.text("env.report-version", ".out").strip().splitlines()
    t.add("kit: cumtrace-report runs", "--version exits 0",
          f"{raw.status('env.report-version')}" + (f": {ver[0]}" if ver else ""),
          "yes" if raw.rc("env.report-version") == 0 else "no",
          ("missing: " + ", ".join(re.findall(r"(\S+) => not found", ldd))) if "not found" in ldd
          else ("raw dump decoder stands in" if raw.rc("env.report-version") != 0 else ""))
    builds = [k for k in raw.steps if k.startswith("build.")]
    ok = [k for k in builds if raw.rc(k) == 0]
    t.add("nvcc builds the programs", f"{len(C_PROGRAMS) * len(CUDARTS)} binaries",
          f"{len(ok)} built", "yes" if len(ok) == len(C_PROGRAMS) * len(CUDARTS) else "no",
          ", ".join(sorted(set(builds) - set(ok)))[:200])
    sv = raw.text("env.sanitizer", ".out").strip().splitlines()
    t.add("compute-sanitizer present", "--version exits 0",
          raw.status("env.sanitizer") + (f": {sv[-1]}" if sv else ""),
          "yes" if raw.rc("env.sanitizer") == 0 else "no")


def layer_note(raw, tag):
    """Which layer recorded the events of a dump (runtime/driver interposition, cupti)."""
    r = raw.raw_decode(tag)
    if not r or "error" in r:
        return "no dump"
    lay = ", ".join(f"{k} {v}" for k, v in sorted(r["layers"].items())) or "no events"
    warn = [ln.strip() for ln in raw.text(tag, ".err").splitlines() if "cumtrace" in ln.lower()]
    head = ""
    if tag.endswith(".cupti"):
        head = "CUPTI engaged; " if r["layers"].get("cupti") else "CUPTI NOT engaged; "
    return head + "events by layer: " + lay + (f"; stderr: {warn[0][:80]}" if warn else "")


def cupti_rows(raw, t):
    for cudart in CUDARTS:
        for prog in C_PROGRAMS:
            tag = f"c.{prog}.{cudart}.cupti"
            if raw.rc(tag) is None:
                continue
            name = f"{prog}/{cudart} CUPTI backend"
            g = raw.gt(tag)
            src, v = raw.view(tag)
            if not (g and v):
                broke = raw.gt(f"c.{prog}.{cudart}.plain") is not None
                t.add(name, "-", f"run {raw.status(tag)}", "no" if broke else "n/a",
                      "no GROUND_TRUTH" if not g else "no readable dump")
                continue
            exp_l = {k: (s["leaked_count"], s["leaked_bytes"]) for k, s in g["kinds"].items()
                     if s["leaked_count"] and k not in ADDRESS_KINDS}
            got_l = leaks_by_kind(v)
            exp = (exp_l, g["peak_device_bytes"], g["allocs"], g["frees"])
            got = (got_l, device_peak(v), v.get("allocations", 0), v.get("frees", 0))
            fmt = lambda x: f"{kinds_cell(x[0])}; dev peak {x[1]}; {x[2]}a/{x[3]}f"
            t.add(name, fmt(exp), value_cell(src, fmt(got)), "yes" if exp == got else "no",
                  layer_note(raw, tag))
    for mode in ("default", "nocache"):
        tag, tp = f"torch.{mode}.cupti", f"torch.{mode}.plain"
        if raw.rc(tag) is None:
            continue
        g, gp = raw.gt(tag), raw.gt(tp)
        src, v = raw.view(tag)
        if not (g and v):
            t.add(f"torch {mode}, CUPTI backend", "-", f"run {raw.status(tag)}",
                  "no" if gp else "n/a", "untraced run " + raw.status(tp))
            continue
        what, exp_peak, exp_live, how = torch_expect(mode, g)
        peak, live, lib = without_cublas(v)
        what += f"; without cuBLAS's own {nb(lib)}"
        if how == "close":
            m = "yes" if close(exp_peak, peak) == "yes" and close(exp_live, live) == "yes" else (
                "~" if "no" not in (close(exp_peak, peak), close(exp_live, live)) else "no")
        else:
            m = "yes" if peak >= exp_peak and exp_live <= live <= exp_live + WORKSPACE_SLACK else "no"
        t.add(f"torch {mode}, CUPTI backend: peak / live", f"{human(exp_peak)} / {human(exp_live)}",
              value_cell(src, f"{human(peak)} / {human(live)}"), m,
              what + "; " + layer_note(raw, tag))
        sp, st = (gp or {}).get("steps_per_s"), g.get("steps_per_s")
        if sp and st:
            r = st / sp
            t.add(f"torch {mode}, CUPTI backend: speed", f"{sp:.1f} steps/s untraced",
                  f"{st:.1f} steps/s", "yes" if r >= 0.9 else ("~" if r >= 0.75 else "no"),
                  f"ratio {r:.3f}")


def report_health_row(raw, t):
    """Every cumtrace-report run of the validation: exit 0 and one JSON document."""
    tags = sorted(k for k in raw.steps if ".report-" in k and not k.startswith("env.")
                  and raw.steps[k]["status"] == "ran")
    bad = []
    for k in tags:
        base, cmd = k.rsplit(".report-", 1)
        ok = raw.rc(k) == 0
        if ok:
            try:
                json.loads(raw.text(base, f".report-{cmd}.out"))
            except ValueError:
                ok = False
        if not ok:
            bad.append(f"{k} (rc {raw.rc(k)})")
    if not tags:
        t.add("cumtrace-report on every dump", "exit 0 and valid JSON", "not run", "n/a",
              "no analyzer in the kit, or no dumps")
        return
    t.add("cumtrace-report on every dump", f"exit 0 and valid JSON, {len(tags)} runs",
          f"{len(tags) - len(bad)} good" + (f"; failed: {', '.join(bad[:6])}" if bad else ""),
          "yes" if not bad else "no", "leaks, summary, peak and timeline, --format json")


def tsan_row(raw, t):
    tag = "c.leak_malloc.shared.tsan"
    g = raw.gt(tag)
    src, v = raw.view(tag)
    if raw.rc(tag) is None:
        return
    if g and v:
        exp = {k: (s["leaked_count"], s["leaked_bytes"]) for k, s in g["kinds"].items() if s["leaked_count"]}
        got = leaks_by_kind(v)
        s = sanitizer(raw, tag)
        t.add("shim inside compute-sanitizer", kinds_cell(exp), value_cell(src, kinds_cell(got)),
              "yes" if exp == got and raw.rc(tag) == 0 else "no",
              f"leak_malloc/shared; sanitizer still reports {s['summary_count']}/{s['summary_bytes']}"
              if s and s["ran"] else "")
    else:
        broke = raw.gt("c.leak_malloc.shared.plain") is not None
        t.add("shim inside compute-sanitizer", "-", f"run {raw.status(tag)}", "no" if broke else "n/a",
              "no dump" if g else "no GROUND_TRUTH")


def symbol_rows(raw, t, cudarts):
    """Leak sites of leak_malloc name the two functions that leak, with file and line."""
    want = ["leak_one_mib", "leak_three_mib_and_a_bit"]
    for cudart in cudarts:
        tag = f"c.leak_malloc.{cudart}.traced"
        rep = raw.report(tag)
        if rep is None:
            t.add(f"leak_malloc/{cudart} leak sites symbolized", "frames in " + ", ".join(want),
                  "no report", "n/a", f"report {raw.status(tag + '.report-leaks')}")
            continue
        found, where = [], []
        for s in (rep.get("leaks") or {}).get("sites") or []:
            for f in s.get("stack") or []:
                fn = f.get("function") or ""
                for w in want:
                    if w in fn and w not in found:
                        found.append(w)
                        where.append(f"{os.path.basename(f.get('file') or '?')}:{f.get('line')}")
        t.add(f"leak_malloc/{cudart} leak sites symbolized", "frames in " + ", ".join(want),
              ", ".join(found) or "none", "yes" if sorted(found) == sorted(want) else "no",
              ", ".join(where))


def torch_symbol_row(raw, t):
    tag = "torch.default.traced.report-symbolized"
    if raw.rc(tag) is None:
        return
    try:
        rep = json.loads(raw.text(tag, ".out"))
    except ValueError:
        t.add("torch leak report symbolized", "libtorch frames named", f"report {raw.status(tag)}",
              "no", "no JSON")
        return
    frames = [f for s in (rep.get("leaks") or {}).get("sites") or [] for f in s.get("stack") or []]
    named = [f.get("function") for f in frames if f.get("function")]
    torchy = [n for n in named if "c10" in n or "at::" in n or "torch" in n]
    t.add("torch leak report symbolized", "libtorch frames named",
          f"{len(named)} of {len(frames)} frames named, {len(torchy)} in c10/at/torch",
          "yes" if torchy else "no",
          f"{raw.secs(tag):.1f}s to symbolize; e.g. {torchy[0][:60] if torchy else '-'}")


def timing_lines(raw):
    lines = ["", "Timings (seconds of wall time per step; rc; status)"]
    for tag in sorted(raw.steps, key=lambda k: (k.split(".")[0], k)):
        s = raw.steps[tag]
        lines.append(f"  {tag:<48} {s['secs']:8.2f}  rc={s['rc']}  {s['status']}")
    ratios = []
    for p in C_PROGRAMS:
        for c in CUDARTS:
            a, b = raw.secs(f"c.{p}.{c}.plain"), raw.secs(f"c.{p}.{c}.traced")
            if a and b and raw.rc(f"c.{p}.{c}.plain") == 0 and raw.rc(f"c.{p}.{c}.traced") == 0:
                ratios.append(b / a)
    if ratios:
        ratios.sort()
        lines.append(f"  C programs, traced/untraced wall time: median {ratios[len(ratios) // 2]:.3f}, "
                     f"max {ratios[-1]:.3f} over {len(ratios)} runs (process start included)")
    total = raw.text("total", ".secs").strip()
    if total:
        lines.append(f"  whole validation run: {total} s")
    return lines


def main():
    if len(sys.argv) < 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    raw_dir, res_dir = sys.argv[1], sys.argv[2]
    if len(sys.argv) > 3:
        os.environ["CUMTRACE_FORMAT_H"] = sys.argv[3]
    raw = Raw(raw_dir)
    t = Table()
    results = {}
    san_seen = defaultdict(lambda: [0, 0, set()])

    def guarded(title, fn, *a):
        try:
            fn(*a)
        except Exception as e:  # one broken check must not hide the others
            import traceback
            traceback.print_exc()
            t.add(f"{title}: checker error", "-", f"{type(e).__name__}: {e}", "n/a",
                  "bug in tests/gpu/compare.py; see compare.err")

    t.section("kit and tools")
    guarded("env", env_rows, raw, t)
    for cudart in CUDARTS:
        t.section(f"CUDA C programs, {cudart} cudart (nvcc{' -cudart shared' if cudart == 'shared' else ''})")
        for prog in C_PROGRAMS:
            guarded(f"{prog}/{cudart}", c_rows, raw, t, results, prog, cudart, san_seen)
    t.section("symbolized leak sites (cumtrace-report leaks, with symbols)")
    guarded("symbols", symbol_rows, raw, t, CUDARTS)
    t.section("compute-sanitizer coverage (memcheck --leak-check full, by kind)")
    for k in SANITIZER_DOC:
        doc = SANITIZER_DOC[k]
        if k in san_seen:
            got, planted, progs = san_seen[k]
            meas = f"reported {got} of {planted} planted leaks ({', '.join(sorted(progs))})"
            if doc.startswith("yes"):
                m = "yes" if got == planted else "no"
            elif doc.startswith("no"):
                m = "yes" if got == 0 else "no"
            else:
                m = "info"
        else:
            meas, m = "not measured", "n/a"
        t.add(f"sanitizer covers {k}", "docs: " + doc, meas, m,
              "the sanitizer rows above compare only what it reports")
    guarded("tsan", tsan_row, raw, t)
    guarded("report health", report_health_row, raw, t)
    t.section("PyTorch (tests/gpu/train.py)")
    guarded("torch", torch_rows, raw, t, results)
    guarded("torch symbols", torch_symbol_row, raw, t)
    t.section("CuPy and JAX (tests/gpu/cupy_jax.py)")
    guarded("frameworks", framework_rows, raw, t, results)
    t.section("CUPTI backend (CUMTRACE_BACKEND=cupti), extras")
    guarded("cupti", cupti_rows, raw, t)

    counts = t.counts()
    table = t.render()
    summary = ("SUMMARY: " + ", ".join(f"{counts.get(k, 0)} {k}" for k in ("yes", "~", "no", "n/a", "info"))
               + " | failed: " + (", ".join(r["check"] for r in t.rows if r.get("match") == "no") or "none"))
    text = "\n".join(["cumtrace GPU validation", table] + timing_lines(raw) + ["", summary, ""])
    os.makedirs(res_dir, exist_ok=True)
    with open(os.path.join(res_dir, "gpu-table.txt"), "w") as f:
        f.write(text)
    with open(os.path.join(res_dir, "gpu-results.json"), "w") as f:
        json.dump({"rows": t.rows, "steps": raw.steps, "results": results,
                   "sanitizer_coverage": {k: [v[0], v[1], sorted(v[2])] for k, v in san_seen.items()},
                   "summary": dict(counts)}, f, indent=1, default=str)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
