# A dry run of scripts/gpu-pyframes.sh with the fake CUDA runtime: a kit made
# of this build and the fake libraries, and tests/e2e/py_train_fake.py (train.py's
# arguments and shape, py_fakelib.py standing in for torch) in place of
# train.py. The script's check (scripts/pyframes-check.py) must pass, and
# must fail when Python frames are off.
. tests/e2e/lib.sh
case ${SANITIZE:-} in
*address* | *thread*) echo "the script preloads the kit's shim alone (no sanitizer runtime)"; exit 77 ;;
esac
kit=$T/kit
mkdir -p "$kit/lib"
ln -s "$SHIM" "$kit/libcumtrace.so"
ln -s "$REPORT" "$kit/cumtrace-report"
ln -s "$FAKE/libcudart.so.13" "$FAKE/libcuda.so.1" "$kit/lib/"
train=$ROOT/tests/e2e/py_train_fake.py
dry() { KIT=$kit TRAIN=$train LIB=py_fakelib.py OUT=$T bash "$ROOT/scripts/gpu-pyframes.sh"; }
dry >"$T/on.txt" || { cat "$T/on.txt"; fail "gpu-pyframes.sh failed its check (exit $?)"; }
cat "$T/on.txt"
leak_line=$(grep -n 'leak.append(' "$train" | cut -d: -f1)
# the planted leak: 5 warm-up steps and 10 steps, called from two lines of main
expect_eq planted_sites \
	"$(grep -cE "^ok: planted leak site names $train:$leak_line \(got (main\.<locals>\.)?step \($train:$leak_line\)\)$" "$T/on.txt")" 2
grep -q "^ok: the planted leak (1048588-byte blocks) is in 2 site(s), 15 blocks$" "$T/on.txt" || fail "planted leak count"
grep -q "^ok: [1-9][0-9]* peak site(s) name both $train and py_fakelib.py$" "$T/on.txt" || fail "peak sites"
grep -q "^ok: [1-9][0-9]* leak site(s) name both $train and py_fakelib.py$" "$T/on.txt" || fail "leak sites"
# in the text reports: the two planted sites among the leaks and at the peak (the script's path
# shown relative to the directory it ran in)
rel=${train#"$ROOT"/}
expect_eq text_report_lines "$(grep -cE "^ +py (main\.<locals>\.)?step \($rel:$leak_line\)$" "$T/pyframes.txt")" 4
# The check can fail: with Python frames off it must.
if CUMTRACE_PYTHON=0 dry >"$T/off.txt"; then
	cat "$T/off.txt"
	fail "the check passed without Python frames"
fi
grep -q '^FAIL: planted leak site names' "$T/off.txt" || fail "no FAIL line without Python frames"
echo "ok: the check fails without Python frames"
