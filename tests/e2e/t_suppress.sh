# Suppression files: each element of the valgrind-style blocks (fun:, obj:,
# src:, ..., '*', '?', match-leak-kinds:, cumtrace:Growth, other tools'
# blocks) and of LeakSanitizer one-liners (leak:, '^', '$'), the "suppressions
# used" table, --gen-suppressions round trips, and errors (exit 2, one line).
. tests/e2e/lib.sh
code() { set +e; "$@" >/dev/null 2>"$T/err.txt"; echo $?; set -e; }
traced lc "$PROGS/leak_classes" >/dev/null
dump=$(dump_of lc)
user_line=$(grep -n 'CHECK(cudaMalloc(&p, n));' tests/e2e/progs/leak_classes.c | head -n 1 | cut -d: -f1)
# supp NAME TEXT: write $T/NAME.supp
supp() { printf '%s\n' "$2" >"$T/$1.supp"; }
# suppressed NAME: "class:bytes" of the sites the file suppresses, sorted
suppressed() {
	"$REPORT" leaks --format json --suppressions "$T/$1.supp" "$dump" >"$T/$1.json" ||
		fail "report with $1.supp exited $?"
	jget "$T/$1.json" 'sorted("%s:%d" % (s["class"], s["bytes"]) for s in j["leaks"]["sites"] if s["suppression"])'
}
U="['leaked:3145728']"
supp fun_exact '{
   user
   cumtrace:Leak
   fun:user_leak
   fun:main
}'
expect_eq fun_exact "$(suppressed fun_exact)" "$U"
supp fun_star '{
  x
  cumtrace:Leak
  fun:c10::cuda::*
}'
expect_eq fun_star "$(suppressed fun_star)" "['cache:2097152']"
supp fun_qmark '{
  x
  cumtrace:Leak
  fun:user_le?k
}'
expect_eq fun_qmark "$(suppressed fun_qmark)" "$U"
supp fun_not_innermost '{
  x
  cumtrace:Leak
  fun:main
}'
expect_eq fun_not_innermost "$(suppressed fun_not_innermost)" "[]"
supp obj_name '{
  x
  cumtrace:Leak
  obj:libcublas.so.*
}'
expect_eq obj_name "$(suppressed obj_name)" "['cache:4194304']"
supp obj_path '{
  x
  cumtrace:Leak
  obj:*/libs/libnccl.so.2
  obj:*/leak_classes
}'
expect_eq obj_path "$(suppressed obj_path)" "['cache:6291456']"
supp src_line "{
  x
  cumtrace:Leak
  src:leak_classes.c:$user_line
}"
expect_eq src_line "$(suppressed src_line)" "$U"
supp src_wrong_line "{
  x
  cumtrace:Leak
  src:leak_classes.c:$((user_line + 1))
}"
expect_eq src_wrong_line "$(suppressed src_wrong_line)" "[]"
supp src_file '{
  x
  cumtrace:Leak
  src:tests/e2e/libs/*.c
}'
expect_eq src_file "$(suppressed src_file)" "['cache:4194304', 'cache:6291456']"
supp dots '{
  x
  cumtrace:Leak
  ...
  fun:main
  obj:*/libc.so.6
}'
expect_eq dots_every_site "$(suppressed dots)" \
	"['cache:2097152', 'cache:4194304', 'cache:6291456', 'leaked:3145728', 'teardown:1048576']"
supp dots_middle '{
  x
  cumtrace:Leak
  fun:c10::*
  ...
  fun:main
}'
expect_eq dots_middle "$(suppressed dots_middle)" "['cache:2097152']"
supp kinds '{
  caches
  cumtrace:Leak
  match-leak-kinds: cache,teardown
  ...
  fun:main
}'
expect_eq match_leak_kinds "$(suppressed kinds)" \
	"['cache:2097152', 'cache:4194304', 'cache:6291456', 'teardown:1048576']"
supp growth_kind '{
  g
  cumtrace:Growth
  ...
  fun:main
}'
expect_eq growth_block_leaves_leaks "$(suppressed growth_kind)" "[]"
supp other_tool '{
  memcheck
  Memcheck:Leak
  match-leak-kinds: definite
  fun:malloc
}
leak:user_leak'
expect_eq other_tools_skipped "$(suppressed other_tool)" "$U"
expect_eq lsan_name "$(jget "$T/other_tool.json" '[s["suppression"] for s in j["leaks"]["sites"] if s["suppression"]]')" "['leak:user_leak']"
supp lsan_module 'leak:libnccl'
expect_eq lsan_module "$(suppressed lsan_module)" "['cache:6291456']"
supp lsan_anchor 'leak:^reset_device'
expect_eq lsan_anchor "$(suppressed lsan_anchor)" "['teardown:1048576']"
supp lsan_anchor_miss 'leak:^device_1'
expect_eq lsan_anchor_miss "$(suppressed lsan_anchor_miss)" "[]"
supp lsan_end 'leak:fake_ncclCommInit$'
expect_eq lsan_end "$(suppressed lsan_end)" "['cache:6291456']"
supp lsan_file 'leak:libs/cublas.c'
expect_eq lsan_file "$(suppressed lsan_file)" "['cache:4194304']"
# The table at the end of the text report: name, sites, allocations, bytes; the gate passes.
supp table '# comment lines and blank lines are skipped

leak:user_leak
leak:nothing_at_all
{
   torch cache
   cumtrace:Leak
   fun:c10::*
}'
"$REPORT" leaks --suppressions "$T/table.supp" "$dump" >"$T/table.txt"
sed -n '/^suppressions used:/,$p' "$T/table.txt" >"$T/used.txt"
printf '%s\n' 'suppressions used:' \
	'   sites allocations        bytes  suppression' \
	'       1           1      3.0 MiB  leak:user_leak' \
	'       1           1      2.0 MiB  torch cache' >"$T/want.txt"
cmp -s "$T/used.txt" "$T/want.txt" || fail "suppressions used table: $(cat "$T/used.txt")"
echo "ok: suppressions used table"
grep -q '^  suppressed: 2 sites, 2 allocations, 5.0 MiB$' "$T/table.txt" || fail "no suppressed line"
expect_eq gate_passes "$(code "$REPORT" leaks --fail-on-leak --suppressions "$T/table.supp" "$dump")" 0
"$REPORT" leaks --format json --suppressions "$T/table.supp" "$dump" >"$T/table.json"
expect_eq json_suppressions \
	"$(jget "$T/table.json" '[(s["name"], s["line"], s["sites"], s["count"], s["bytes"]) for s in j["leaks"]["suppressions"]]')" \
	"[('leak:user_leak', 3, 1, 1, 3145728), ('leak:nothing_at_all', 4, 0, 0, 0), ('torch cache', 5, 1, 1, 2097152)]"
# Two files: both apply.
expect_eq two_files "$(code "$REPORT" leaks --fail-on=all --suppressions "$T/table.supp" --suppressions="$T/kinds.supp" "$dump")" 0
expect_eq one_of_two "$(code "$REPORT" leaks --fail-on=all --suppressions "$T/table.supp" "$dump")" 1
# --gen-suppressions: a block per site; all of them together suppress every site.
"$REPORT" leaks --gen-suppressions "$dump" >"$T/gen.txt"
sed -n '/^{$/,/^}$/p' "$T/gen.txt" >"$T/gen.supp"
expect_eq generated_blocks "$(grep -c '^{$' "$T/gen.supp")" 5
grep -q '^   fun:user_leak$' "$T/gen.supp" || fail "no fun:user_leak line in $(cat "$T/gen.supp")"
grep -q '^   match-leak-kinds: teardown$' "$T/gen.supp" || fail "no teardown block"
# blocks stop at main, as text stacks do (issue 17): no C library start-up frames
grep -q '^   fun:main$' "$T/gen.supp" || fail "no fun:main line in $(cat "$T/gen.supp")"
! grep -q '^   fun:\(__libc_start\|_start$\)' "$T/gen.supp" || fail "start-up frames past main in $(cat "$T/gen.supp")"
expect_eq gen_round_trip "$(code "$REPORT" leaks --fail-on=all --suppressions "$T/gen.supp" "$dump")" 0
report "$T/gen.json" leaks --suppressions "$T/gen.supp" "$dump"
expect_eq gen_all_suppressed "$(jget "$T/gen.json" '[s["suppression"] is not None for s in j["leaks"]["sites"]]')" \
	"[True, True, True, True, True]"
# JSON carries each block too.
report "$T/genj.json" leaks --gen-suppressions "$dump"
jget "$T/genj.json" '"".join(s["suppression_block"] for s in j["leaks"]["sites"])' >"$T/genj.supp"
expect_eq gen_json_round_trip "$(code "$REPORT" leaks --fail-on=all --suppressions "$T/genj.supp" "$dump")" 0
expect_eq gen_csv_refused "$(code "$REPORT" leaks --gen-suppressions --format csv "$dump")" 2
# Growth blocks suppress growth sites.
NVTX_INJECTION64_PATH=$SHIM traced gr "$PROGS/growth" nvtx
"$REPORT" leaks --gen-suppressions "$(dump_of gr)" | sed -n '/^{$/,/^}$/p' >"$T/ggen.supp"
grep -q '^   cumtrace:Growth$' "$T/ggen.supp" || fail "no growth block"
expect_eq growth_gate "$(code "$REPORT" leaks --fail-on=growth "$(dump_of gr)")" 1
expect_eq growth_suppressed "$(code "$REPORT" leaks --fail-on=growth --suppressions "$T/ggen.supp" "$(dump_of gr)")" 0
# Errors: exit 2, one line naming the file and the line.
supp bad '{
  x
  cumtrace:Leak
  fun:a
  bogus:b
}'
expect_eq bad_line "$(code "$REPORT" leaks --suppressions "$T/bad.supp" "$dump")" 2
expect_eq bad_message "$(cat "$T/err.txt")" \
	"cumtrace-report: $T/bad.supp:5: expected fun:, obj:, src:, ..., match-leak-kinds: or '}'"
supp unclosed '{
  x
  cumtrace:Leak
  fun:a'
expect_eq unclosed "$(code "$REPORT" leaks --suppressions "$T/unclosed.supp" "$dump")" 2
expect_eq unclosed_message "$(cat "$T/err.txt")" "cumtrace-report: $T/unclosed.supp:1: suppression block not closed with '}'"
expect_eq missing_file "$(code "$REPORT" leaks --suppressions "$T/nope.supp" "$dump")" 2
expect_eq missing_one_line "$(wc -l <"$T/err.txt" | tr -d ' ')" 1
