# The Python bootstrap (preload/pyboot.c, python/cumtrace/_boot.py): with
# plain LD_PRELOAD and no change to the program, torch optimizer steps become
# step boundaries (growth found without markers), explicit steps win over
# them, CuPy's pool blocks become framework events, JAX's memory_stats()
# become counters at steps; CUMTRACE_PYTHON_BOOT=0 turns it off; a user's
# sitecustomize still runs; a missing or broken package warns once and the
# program's output is unchanged; sys.path is left alone; a program that is
# not Python is unaffected. The frameworks are the stand-ins of
# tests/e2e/pyfw, the CUDA runtime the fake one through ctypes
# (tests/e2e/pyfw_train.py).
. tests/e2e/lib.sh
command -v python3 >/dev/null || { echo "python3 not found"; exit 77; }
DRIVER=$ROOT/tests/e2e/pyfw_train.py
PYFW=$ROOT/tests/e2e/pyfw
PKG=$ROOT/$BUILD/python
[ -f "$PKG/cumtrace/__init__.py" ] || fail "no $PKG/cumtrace: build it (make)"
keep_line=$(grep -n '# KEEP-LINE$' "$DRIVER" | cut -d: -f1)
FAILED="no automatic steps, CuPy or JAX records"

# run NAME SCENARIO [VAR=VALUE...]: the driver traced, stdout in $T/NAME.out, stderr in $T/NAME.err
run() {
	rn=$1 rsc=$2
	shift 2
	traced "$rn" env PYTHONPATH="$PYFW:$PKG" "$@" python3 "$DRIVER" "$rsc" >"$T/$rn.out" 2>"$T/$rn.err" ||
		{ cat "$T/$rn.err"; fail "$rn: the driver failed"; }
}
# same_as_untraced NAME SCENARIO: the traced run printed what the program prints untraced
same_as_untraced() {
	untraced env PYTHONPATH="$PYFW:$PKG" python3 "$DRIVER" "$2" >"$T/$1.plain" || fail "$1: untraced run failed"
	diff -u "$T/$1.plain" "$T/$1.out" || fail "$1: output changed under the shim"
	echo "ok: $1 output unchanged"
}
summary_has() {
	grep -qxF "$2" "$T/$1.sum" || fail "$1 summary lacks '$2': $(cat "$T/$1.sum")"
	echo "ok: $1 summary: $2"
}
leaks_has() {
	grep -qxF "$2" "$T/$1.leaks" || fail "$1 leaks report lacks '$2': $(cat "$T/$1.leaks")"
	echo "ok: $1 leaks: $2"
}
reports() {
	d=$(dump_of "$1")
	"$REPORT" summary "$d" >"$T/$1.sum" || fail "$1: summary failed"
	"$REPORT" leaks "$d" >"$T/$1.leaks" || fail "$1: leaks failed"
	report "$T/$1.json" leaks "$d"
}

# Optimizer steps, torch imported before the first CUDA call: growth without any marker, at the line.
run optim optim
same_as_untraced optim optim
expect_eq optim_stderr "$(cat "$T/optim.err")" ""
reports optim
summary_has optim "  steps: 0 explicit (cumtrace.step), 12 from optimizer hooks"
leaks_has optim 'growth across "SGD" (steps from optimizer hooks: 12 boundaries, 11 steps; growing: live bytes rose in at least 6 of the last 8 steps): 1 site, +8.0 MiB'
expect_eq optim_series "$(jget "$T/optim.json" '[(s["name"], s["kind"], s["steps"], s["optimizer_boundaries"]) for s in j["leaks"]["growth"]["series"]]')" \
	"[('SGD', 'optimizer', 11, 12)]"
expect_eq optim_line "$(jget "$T/optim.json" '[(f["function"], f["line"]) for f in j["leaks"]["growth"]["sites"][0]["stack"] if f.get("python") and f["function"] == "train"]')" \
	"[('train', $keep_line)]"
# the Perfetto trace shows each optimizer step as an instant
"$REPORT" perfetto "$(dump_of optim)" -o "$T/optim.trace.json" || fail "perfetto failed"
expect_eq optim_perfetto "$(jget "$T/optim.trace.json" 'sum(1 for e in (j["traceEvents"] if isinstance(j, dict) else j) if e.get("ph") in ("i", "I") and e.get("name") == "SGD")')" 12

# The same through the wrapper. Not under ThreadSanitizer: the wrapper puts the
# shim first in LD_PRELOAD, and the TSan-built shim loaded into the uninstrumented
# python3 before libtsan cannot start (the instrumented test programs start
# TSan from their own preinit array; python3 does not).
if tsan_build; then
	echo "skip: the wrapper part (a TSan-built shim must follow libtsan in LD_PRELOAD; the wrapper puts it first)"
else
	LD_LIBRARY_PATH=$FAKE CUMTRACE_LIB=$SHIM CUMTRACE_REPORT=$REPORT PYTHONPATH="$PYFW" \
		sh "$ROOT/bin/cumtrace" run --no-summary -o "$T/wrap.dump" -- python3 "$DRIVER" optim >"$T/wrap.out" 2>&1 ||
		fail "wrapper: $(cat "$T/wrap.out")"
	"$REPORT" summary "$T/wrap.dump" >"$T/wrap.sum" || fail "wrapper: no dump"
	summary_has wrap "  steps: 0 explicit (cumtrace.step), 12 from optimizer hooks"
fi

# The first CUDA call made on another thread: the bootstrap still runs on the main thread.
run thread thread
reports thread
summary_has thread "  steps: 0 explicit (cumtrace.step), 12 from optimizer hooks"

# The bootstrap runs while torch.optim.optimizer's own code runs: hooked once it is complete.
run midimport optim PYFW_CUDA_AT_IMPORT=1
reports midimport
summary_has midimport "  steps: 0 explicit (cumtrace.step), 12 from optimizer hooks"
expect_eq midimport_stderr "$(cat "$T/midimport.err")" ""

# Under a sanitizer the scenarios that run the bootstrap's code paths have run (the
# pending call from the main thread and from another, a module half imported; the
# shim's writer thread against them); the rest check what the reports say of one
# more program each, and run in the plain pass.
if sanitized_build; then
	echo "$SANITIZE: optim, thread and midimport ran; the other scenarios run in the plain pass"
	exit 0
fi

# torch imported after the first CUDA call: hooked by the import finder.
run late late
same_as_untraced late late
reports late
summary_has late "  steps: 0 explicit (cumtrace.step), 12 from optimizer hooks"
expect_eq late_series "$(jget "$T/late.json" '[(s["name"], s["kind"], s["steps"]) for s in j["leaks"]["growth"]["series"]]')" \
	"[('SGD', 'optimizer', 11)]"

# Explicit steps (cumtrace.step(), once per iteration) win over twice as many optimizer steps.
run explicit explicit
reports explicit
summary_has explicit "  steps: 10 explicit (cumtrace.step), 20 from optimizer hooks"
leaks_has explicit "growth: 20 steps from optimizer hooks not used: explicit marks win"
expect_eq explicit_series "$(jget "$T/explicit.json" '[(s["name"], s["kind"], s["steps"]) for s in j["leaks"]["growth"]["series"]]')" \
	"[('step', 'step', 9)]"
expect_eq explicit_growth "$(jget "$T/explicit.json" '[(s["grew_steps"], s["growth_bytes"]) for s in j["leaks"]["growth"]["sites"]]')" \
	"[(8, 8388608)]"

# CuPy: the pool's blocks from the hook's thread, once hooked (the first block
# came before the bootstrap; the worker thread's are not seen), and the pool's
# figures as counters at the bootstrap and at the step.
run cupy cupy
same_as_untraced cupy cupy
reports cupy
summary_has cupy "  framework events: 9 (cupy: alloc 5, free 4)"
summary_has cupy "  counter cupy.used_bytes (device 0): 2 samples, last 11.0 KiB, max 11.0 KiB"
report "$T/cupy.sum.json" summary "$(dump_of cupy)"
expect_eq cupy_json "$(jget "$T/cupy.sum.json" '(j["summary"]["framework"]["by_api"], j["allocations"], [(c["name"], c["samples"], c["last"]) for c in j["dumps"][0]["counters"]])')" \
	"({'cupy_alloc': 5, 'cupy_free': 4}, 1, [('cupy.used_bytes', 2, 11264), ('cupy.total_bytes', 2, 21504)])"
# each block as the pool counts it (rounded to 512), the request in aux, on the main thread
python3 "$ROOT/bin/ctdump.py" "$(dump_of cupy)" | grep -o 'cupy_alloc ptr=0x[0-9a-f]* size=[0-9]*' | sed 's/ptr=0x[0-9a-f]* //' >"$T/cupy.sizes"
expect_eq cupy_sizes "$(tr '\n' ' ' <"$T/cupy.sizes")" "cupy_alloc size=2048 cupy_alloc size=3072 cupy_alloc size=4096 cupy_alloc size=5120 cupy_alloc size=6144 "

# JAX: bytes in use and peak per device at each step.
run jax jax
reports jax
summary_has jax "  steps: 3 explicit (cumtrace.step), 0 from optimizer hooks"
summary_has jax "  counter jax.bytes_in_use (device 0): 3 samples, last 3.0 MiB, max 3.0 MiB"
summary_has jax "  counter jax.peak_bytes_in_use (device 1): 3 samples, last 5.0 MiB, max 5.0 MiB"
python3 "$ROOT/bin/ctdump.py" "$(dump_of jax)" | grep -o 'counter ts=[0-9]* jax.bytes_in_use=[0-9]* dev=0' | sed 's/ts=[0-9]* //' >"$T/jax.c"
expect_eq jax_samples "$(tr '\n' ' ' <"$T/jax.c")" \
	"counter jax.bytes_in_use=1048576 dev=0 counter jax.bytes_in_use=2097152 dev=0 counter jax.bytes_in_use=3145728 dev=0 "

# A fork child inherits the hooks and records its own steps into its own dump; never bootstrapped twice.
if ! tsan_build; then
	run fork fork CUMTRACE_QUIET=0
	expect_eq fork_stderr "$(cat "$T/fork.err")" ""
	for d in "$T"/fork.*.dump; do
		"$REPORT" summary "$d" | grep '^  steps:'
	done | sort >"$T/fork.steps"
	expect_eq fork_steps "$(cat "$T/fork.steps")" "  steps: 0 explicit (cumtrace.step), 3 from optimizer hooks
  steps: 0 explicit (cumtrace.step), 6 from optimizer hooks"
fi

# CUMTRACE_PYTHON_BOOT=0: no step boundaries, no growth without markers, nothing imported.
run off optim CUMTRACE_PYTHON_BOOT=0
reports off
grep -q "steps:" "$T/off.sum" && fail "off: steps recorded: $(cat "$T/off.sum")"
grep -q "^growth" "$T/off.leaks" && fail "off: growth reported: $(cat "$T/off.leaks")"
echo "ok: CUMTRACE_PYTHON_BOOT=0 records no step"

# A user's sitecustomize still runs, and the bootstrap too.
mkdir -p "$T/site"
printf '%s\n' 'print("user sitecustomize ran")' >"$T/site/sitecustomize.py"
traced site env PYTHONPATH="$T/site:$PYFW" python3 "$DRIVER" optim >"$T/site.out" 2>"$T/site.err" || fail "site: driver failed"
expect_eq site_output "$(head -n 1 "$T/site.out")" "user sitecustomize ran"
reports site
summary_has site "  steps: 0 explicit (cumtrace.step), 12 from optimizer hooks"

# sys.path is not changed.
run plain plain
same_as_untraced plain plain

# A failing bootstrap warns once (the shim's style) and changes nothing else:
# the shim alone, without its package beside it; then a package that raises.
shim_at() {
	mkdir -p "$1"
	cp "$SHIM" "$1/libcumtrace.so"
	echo "$PRELOAD" | sed "s|$SHIM|$1/libcumtrace.so|"
}
untraced env PYTHONPATH="$PYFW" python3 "$DRIVER" plain >"$T/nopkg.plain"
pre=$(shim_at "$T/bare")
LD_LIBRARY_PATH=$FAKE LD_PRELOAD=$pre CUMTRACE_QUIET=0 CUMTRACE_OUTPUT="$T/bare.%p.dump" PYTHONPATH="$PYFW" \
	python3 "$DRIVER" plain >"$T/bare.out" 2>"$T/bare.err" || fail "bare: driver failed"
diff -u "$T/nopkg.plain" "$T/bare.out" || fail "bare: output changed"
expect_eq bare_warning "$(cat "$T/bare.err")" \
	"cumtrace: Python bootstrap failed (no package in $T/bare/python or $T/bare/cumtrace/python): $FAILED"
pre=$(shim_at "$T/broken")
mkdir -p "$T/broken/python/cumtrace"
echo 'raise RuntimeError("broken on purpose")' >"$T/broken/python/cumtrace/__init__.py"
LD_LIBRARY_PATH=$FAKE LD_PRELOAD=$pre CUMTRACE_QUIET=0 CUMTRACE_OUTPUT="$T/broken.%p.dump" PYTHONPATH="$PYFW" \
	python3 "$DRIVER" plain >"$T/broken.out" 2>"$T/broken.err" || fail "broken: driver failed"
diff -u "$T/nopkg.plain" "$T/broken.out" || fail "broken: output changed"
expect_eq broken_warning "$(cat "$T/broken.err")" \
	"cumtrace: Python bootstrap failed (RuntimeError: broken on purpose): $FAILED"
# the optimizer loop under a broken package: the program runs on, no steps
LD_LIBRARY_PATH=$FAKE LD_PRELOAD=$pre CUMTRACE_OUTPUT="$T/brokenopt.%p.dump" PYTHONPATH="$PYFW" \
	python3 "$DRIVER" optim >"$T/brokenopt.out" 2>"$T/brokenopt.err" || fail "brokenopt: driver failed"
expect_eq brokenopt_output "$(cat "$T/brokenopt.out")" "done optim 12"
expect_eq brokenopt_warnings "$(grep -c 'Python bootstrap failed' "$T/brokenopt.err")" 1

# The installed layout (make install): PREFIX/lib/libcumtrace.so finds PREFIX/lib/cumtrace/python.
pre=$(shim_at "$T/pfx/lib")
mkdir -p "$T/pfx/lib/cumtrace/python"
cp -r "$PKG/cumtrace" "$T/pfx/lib/cumtrace/python/"
LD_LIBRARY_PATH=$FAKE LD_PRELOAD=$pre CUMTRACE_QUIET=0 CUMTRACE_OUTPUT="$T/pfx.%p.dump" PYTHONPATH="$PYFW" \
	python3 "$DRIVER" optim >"$T/pfx.out" 2>"$T/pfx.err" || fail "pfx: driver failed"
expect_eq pfx_stderr "$(cat "$T/pfx.err")" ""
"$REPORT" summary "$(dump_of pfx)" >"$T/pfx.sum"
summary_has pfx "  steps: 0 explicit (cumtrace.step), 12 from optimizer hooks"

# A program that is not Python: unchanged, nothing said.
LD_LIBRARY_PATH=$FAKE LD_PRELOAD=$PRELOAD CUMTRACE_QUIET=0 CUMTRACE_OUTPUT="$T/c.%p.dump" "$PROGS/basic" >"$T/c.out" 2>"$T/c.err" ||
	fail "basic failed under the shim"
untraced "$PROGS/basic" >"$T/c.plain" 2>/dev/null || fail "basic failed"
diff -u "$T/c.plain" "$T/c.out" || fail "basic: output changed"
expect_eq c_stderr "$(cat "$T/c.err")" ""
echo "ok: all"
