# A program that never calls CUDA leaves no dump and runs unchanged.
. tests/e2e/lib.sh
out=$(traced none "$PROGS/nocuda")
expect_eq output "$out" "no cuda here"
set -- "$T"/none.*
[ ! -e "$1" ] || fail "dump created: $*"
echo "ok: no dump"
