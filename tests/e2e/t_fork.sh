# fork: the child writes its own dump naming its parent; a child that never
# calls CUDA writes none.
. tests/e2e/lib.sh
no_fork_under_tsan
traced fork "$PROGS/forker" >"$T/out.txt"
read -r _ parent _ child _ idle <"$T/out.txt"
[ -f "$T/fork.$parent.dump" ] || fail "no parent dump"
[ -f "$T/fork.$child.dump" ] || fail "no child dump"
[ ! -e "$T/fork.$idle.dump" ] || fail "the child that never called CUDA left a dump"
report "$T/p.json" leaks "$T/fork.$parent.dump"
report "$T/c.json" leaks "$T/fork.$child.dump"
expect_eq parent_leak "$(jget "$T/p.json" 'j["leaks"]["bytes"]')" 1048576
expect_eq child_leak "$(jget "$T/c.json" 'j["leaks"]["bytes"]')" 2097152
expect_eq child_allocs "$(jget "$T/c.json" 'j["allocations"]')" 2
expect_eq child_ppid "$(jget "$T/c.json" 'j["dumps"][0]["ppid"]')" "$parent"
expect_eq child_pid "$(jget "$T/c.json" 'j["dumps"][0]["pid"]')" "$child"

# Several dumps without ranks that are a process and its fork children are a process
# tree (issue 17, "processes"): named by pid, parent first, whatever the order given;
# not "ranks numbered by position".
host=$(jget "$T/c.json" 'j["dumps"][0]["host"]')
"$REPORT" leaks "$T/fork.$child.dump" "$T/fork.$parent.dump" >"$T/tree.txt"
expect_eq tree_head "$(head -n 1 "$T/tree.txt")" \
	"cumtrace leaks: 2 allocations, 3.0 MiB (3145728 bytes) not freed in 2 processes (pid $parent and its children) on host $host"
grep -q "numbered by position" "$T/tree.txt" && fail "a process tree numbered by position: $(cat "$T/tree.txt")"
expect_eq tree_table "$(sed -n '/^  process /,/^$/p' "$T/tree.txt" | cut -c1-34 | sed 's/ *$//')" "  process
  pid $parent (parent)
    pid $child (child of $parent)"
expect_eq tree_shares "$(grep -A1 '^#1 ' "$T/tree.txt")" \
	"#1   3.0 MiB in 2 allocations in 2 processes (device, cudaMalloc, live at exit): leaked
      pid $child (child of $parent): 1 x 2.0 MiB; pid $parent (parent): 1 x 1.0 MiB"
"$REPORT" summary "$T/fork.$child.dump" "$T/fork.$parent.dump" >"$T/tree.sum"
grep -q "the sum of each process's own peak; highest: pid $child (child of $parent), 2.0 MiB\$" "$T/tree.sum" ||
	fail "summary of the tree: $(cat "$T/tree.sum")"
"$REPORT" peak "$T/fork.$parent.dump" "$T/fork.$child.dump" >"$T/tree.peak"
grep -q "^  highest: pid $child (child of $parent), 2.0 MiB" "$T/tree.peak" || fail "peak of the tree: $(cat "$T/tree.peak")"
report "$T/tree.json" leaks "$T/fork.$child.dump" "$T/fork.$parent.dump"
expect_eq tree_json "$(jget "$T/tree.json" '[(r["rank"], r["rank_source"], r["pid"], r["parent_pid"]) for r in j["ranks"]]')" \
	"[(0, 'tree', $parent, None), (1, 'tree', $child, $parent)]"
# two runs: two trees; two parents alone are no tree (ranks by position, as before)
mkdir "$T/run2"
LD_LIBRARY_PATH=$FAKE LD_PRELOAD=$PRELOAD CUMTRACE_OUTPUT="$T/run2/fork.%p.dump" "$PROGS/forker" >"$T/out2.txt"
read -r _ parent2 _ child2 _ _ <"$T/out2.txt"
"$REPORT" leaks "$T"/fork.*.dump "$T"/run2/fork.*.dump >"$T/two.txt"
grep -q " in 4 processes (2 process trees) on host $host\$" "$T/two.txt" || fail "two trees: $(head -n 3 "$T/two.txt")"
"$REPORT" leaks "$T/fork.$parent.dump" "$T/run2/fork.$parent2.dump" >"$T/pair.txt"
grep -q " in 2 ranks (0-1) on host $host\$" "$T/pair.txt" && grep -q "numbered by position" "$T/pair.txt" ||
	fail "two parents: $(head -n 3 "$T/pair.txt")"
echo "ok: a process and its fork children: named by pid, parent first (text, JSON); unrelated dumps: ranks by position"
