# fork, exec, posix_spawn, vfork and a daemon from a multi-threaded parent
# whose three worker threads allocate the whole time (hostile_fork): no
# deadlock (the run is limited to 20 s); exactly one dump per process that
# allocated and none for the rest (fork children without CUDA, an exec'ed
# image without CUDA, the daemon's intermediate parent); each child's dump
# names its parent pid and holds exactly the child's allocations (none of the
# parent's unflushed events); the parent's allocations and frees are exact.
. tests/e2e/lib.sh
no_fork_under_tsan
set +e
traced fork timeout 20 "$PROGS/hostile_fork" >"$T/out.txt" 2>"$T/err.txt"
rc=$?
set -e
[ "$rc" != 124 ] || fail "deadlock: still running after 20 s; output: $(cat "$T/out.txt")"
expect_eq exit_status "$rc" 0
python3 - "$T" "$REPORT" <<'PY'
import glob, json, os, subprocess, sys
T, report = sys.argv[1], sys.argv[2]
bad = []
def check(what, got, want):
    print(("ok: " if got == want else "NOT OK: ") + f"{what} = {got}" + ("" if got == want else f", expected {want}"))
    if got != want:
        bad.append(what)
procs, noprocs, expect = [], [], {}
for line in open(f"{T}/out.txt"):
    w = line.split()
    if w[0] == "proc":
        procs.append((w[1], int(w[2]), int(w[3]), int(w[4])))
    elif w[0] == "noproc":
        noprocs.append((w[1], int(w[2])))
    elif w[0] == "expect":
        expect[w[1]] = int(w[2])
check("children that must leave a dump", sorted(p[0] for p in procs),
      sorted(["fork-exec", "posix_spawn", "vfork-exec", "fork-alloc", "daemon"]))
check("children that must not", sorted(p[0] for p in noprocs),
      sorted(["fork-nocuda"] * 3 + ["fork-exec-idle", "daemon-parent"]))
check("failures in the program", expect["failures"], 0)
def summary(pid):
    out = subprocess.run([report, "summary", "--format", "json", f"{T}/fork.{pid}.dump"],
                         capture_output=True, text=True)
    if out.returncode != 0:
        bad.append(f"report of {pid}: {out.stderr.strip()}")
        return None
    return json.loads(out.stdout)
parent = expect["parent"]
j = summary(parent)
if j:
    check("parent allocations", j["allocations"], expect["allocations"])
    check("parent frees", j["frees"], expect["frees"])
    check("parent dropped", j["dumps"][0]["dropped_events"], 0)
    check("parent clean_exit", j["dumps"][0]["clean_exit"], True)
for kind, pid, ppid, n in procs:
    j = summary(pid)
    if j:
        d = j["dumps"][0]
        forked = kind in ("fork-alloc", "daemon")  # no exec after the fork
        check(f"{kind} {pid}: pid, ppid, forked, allocations, frees, clean_exit",
              (d["pid"], d["ppid"], d["forked"], j["allocations"], j["frees"], d["clean_exit"]),
              (pid, ppid, forked, n, 0, True))
for kind, pid in noprocs:
    check(f"{kind} {pid}: dumps", glob.glob(f"{T}/fork.{pid}.dump*"), [])
names = sorted(os.path.basename(p) for p in glob.glob(f"{T}/fork.*"))
check("all dumps", names, sorted(f"fork.{p}.dump" for p in [parent] + [p[1] for p in procs]))
sys.exit(1 if bad else 0)
PY
