# Return codes and errno pass through unchanged: traced output == untraced.
. tests/e2e/lib.sh
untraced "$PROGS/errors" >"$T/plain.txt"
traced errors "$PROGS/errors" >"$T/traced.txt"
diff "$T/plain.txt" "$T/traced.txt" || fail "traced output differs"
echo "ok: $(wc -l <"$T/plain.txt") calls, identical return codes and errno"
report "$T/s.json" summary "$(dump_of errors)"
expect_eq failed_calls "$(jget "$T/s.json" 'j["failed_calls"]')" \
	"$(grep -v 'rc=0 ' "$T/plain.txt" | grep -vc GetLastError)"
