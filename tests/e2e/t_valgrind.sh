# The analyzer under valgrind (memcheck, full leak check) on dumps made by the
# test programs (every command as JSON, plus text and CSV once); any error fails.
. tests/e2e/lib.sh
command -v valgrind >/dev/null 2>&1 || { echo "valgrind not installed"; exit 77; }
case ${SANITIZE:-} in ?*) echo "valgrind does not run sanitizer builds"; exit 77 ;; esac
traced basic "$PROGS/basic" >/dev/null
traced vmm "$PROGS/paths_vmm" >/dev/null
vg() { # what, report args...: run the analyzer under memcheck, fail on any error
	what=$1
	shift
	valgrind -q --error-exitcode=9 --leak-check=full --errors-for-leak-kinds=definite,indirect,possible \
		"$REPORT" "$@" -o "$T/out" 2>"$T/vg.txt" || fail "valgrind $what exited $?: $(cat "$T/vg.txt")"
	[ ! -s "$T/vg.txt" ] || fail "valgrind $what: $(cat "$T/vg.txt")"
}
for cmd in leaks peak summary timeline; do
	vg "$cmd json basic" "$cmd" --format json "$(dump_of basic)"
done
for cmd in perfetto flamegraph memviz html; do
	vg "$cmd basic" "$cmd" "$(dump_of basic)"
done
vg "speedscope vmm" flamegraph --of allocs --format speedscope "$(dump_of vmm)"
vg "leaks text vmm" leaks --format text "$(dump_of vmm)"
vg "timeline csv vmm" timeline --format csv "$(dump_of vmm)"
vg "html basic vmm" html "$(dump_of basic)" "$(dump_of vmm)"
# and a truncated dump (the warning is the only line allowed on stderr)
head -c 3001 "$(dump_of basic)" >"$T/cut.dump"
valgrind -q --error-exitcode=9 --leak-check=full "$REPORT" leaks --format json -o "$T/out" "$T/cut.dump" \
	2>"$T/vg.txt" || fail "valgrind on a truncated dump exited $?: $(cat "$T/vg.txt")"
[ "$(grep -vc 'truncated at offset' "$T/vg.txt")" -eq 0 ] || fail "valgrind on a truncated dump: $(cat "$T/vg.txt")"
echo ok
