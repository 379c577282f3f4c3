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
