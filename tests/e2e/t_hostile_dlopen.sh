# libcudart dlopen'ed, used, dlclose'd (really unloaded), dlopen'ed again and
# used again by a program that does not link it: no crash, exit 0, and every
# call recorded as the runtime call it was: cudaMalloc 3 + 4 = 7,
# cudaFree 2 + 3 = 5, no driver-level events. Four ways: the handle or
# RTLD_DEFAULT (RTLD_GLOBAL loads), and the second load where the first was or
# forced elsewhere (its old address taken by a placeholder mapping).
. tests/e2e/lib.sh
bad=""
for how in "same" "moved" "same global" "moved global"; do
	name=$(echo "$how" | tr ' ' '-')
	set +e
	# shellcheck disable=SC2086 # $how is two words on purpose
	LD_LIBRARY_PATH=$FAKE LD_PRELOAD=$PRELOAD CUMTRACE_OUTPUT="$T/dl-$name.%p.dump" \
		timeout 20 "$PROGS/hostile_dlopen" $how >"$T/$name.txt" 2>"$T/$name.err"
	rc=$?
	set -e
	if [ "$rc" != 0 ]; then
		echo "NOT OK: $name: exit status $rc, expected 0 ($(cat "$T/$name.txt" "$T/$name.err" | tr '\n' ' '))"
		bad="$bad $name(exit $rc)"
		continue
	fi
	echo "ok: $name: exit 0; $(tr '\n' ' ' <"$T/$name.txt")"
	dump=$(dump_of "dl-$name")
	report "$T/$name.json" summary "$dump"
	calls=$(jget "$T/$name.json" 'sorted((k, v["calls"]) for k, v in j["summary"]["apis"].items())')
	got="$(jget "$T/$name.json" 'j["allocations"]') $(jget "$T/$name.json" 'j["frees"]') $calls"
	want="7 5 [('cudaFree', 5), ('cudaMalloc', 7)]"
	if [ "$got" = "$want" ]; then
		echo "ok: $name: allocations frees calls = $got"
	else
		echo "NOT OK: $name: allocations frees calls = $got, expected $want"
		bad="$bad $name"
	fi
done
[ -z "$bad" ] || fail "dlopen/dlclose/dlopen:$bad"
