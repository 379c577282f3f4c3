# Leak gating and usage errors: exit codes 0, 1, N and 2.
. tests/e2e/lib.sh
traced gate "$PROGS/basic" >/dev/null
dump=$(dump_of gate)
code() { set +e; "$@" >/dev/null 2>"$T/err.txt"; echo $?; set -e; }
expect_eq no_gate "$(code "$REPORT" leaks "$dump")" 0
expect_eq fail_on_leak "$(code "$REPORT" leaks --fail-on-leak "$dump")" 1
expect_eq error_exitcode "$(code "$REPORT" leaks --fail-on-leak --error-exitcode 7 "$dump")" 7
traced clean "$PROGS/clean"
expect_eq clean_fail_on_leak "$(code "$REPORT" leaks --fail-on-leak "$(dump_of clean)")" 0
expect_eq bad_option "$(code "$REPORT" leaks --bogus "$dump")" 2
expect_eq one_line_error "$(wc -l <"$T/err.txt" | tr -d ' ')" 1
expect_eq missing_file "$(code "$REPORT" leaks "$T/missing.dump")" 2
expect_eq one_line_error "$(wc -l <"$T/err.txt" | tr -d ' ')" 1
printf 'NOTADUMP________' >"$T/bad.dump"
expect_eq bad_magic "$(code "$REPORT" leaks "$T/bad.dump")" 2
grep -q "offset 0" "$T/err.txt" || fail "bad magic error lacks the offset: $(cat "$T/err.txt")"
expect_eq directory "$(code "$REPORT" leaks "$T")" 2
expect_eq no_dump "$(code "$REPORT" leaks)" 2
expect_eq help "$(code "$REPORT" --help)" 0
