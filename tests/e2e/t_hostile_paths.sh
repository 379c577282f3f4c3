# Output paths t_unwritable.sh and t_enospc.sh do not cover. Each: the
# program's output and exit code are the untraced ones, and where the dump
# cannot be made, exactly one warning naming the path is printed.
#  1. a path under a regular file (ENOTDIR: works as root, unlike mode 0500)
#  2. a read-only bind mount of a directory (EROFS; needs a private mount
#     namespace, skipped when unshare is not allowed)
#  3. a directory of mode 0500 (only as non-root: root ignores the mode)
#  4. a symlink to an existing file at the output path: not followed, the
#     file keeps its content, the dump goes to PATH.1
#  5. an existing directory as the output path: one warning (EISDIR)
#  6. a FIFO at the output path: never opened (no hang; the run is limited to
#     20 s), the dump goes to PATH.1
#  7. a symlink to a directory as the directory part of the template: that
#     is the user's choice of directory and is followed (the dump lands in it)
. tests/e2e/lib.sh
untraced "$PROGS/basic" >"$T/plain.txt"

# unusable OUT WHAT [WRAP...]: run basic with CUMTRACE_OUTPUT=OUT, expect one warning
unusable() {
	out=$1
	what=$2
	shift 2
	set +e
	"$@" env LD_LIBRARY_PATH="$FAKE" LD_PRELOAD="$PRELOAD" CUMTRACE_OUTPUT="$out" \
		"$PROGS/basic" >"$T/traced.txt" 2>"$T/err.txt"
	rc=$?
	set -e
	expect_eq "$what: exit_code" "$rc" 0
	diff "$T/plain.txt" "$T/traced.txt" || fail "$what: output differs"
	expect_eq "$what: warnings" "$(wc -l <"$T/err.txt" | tr -d ' ')" 1
	grep -q "cumtrace: cannot create ${out%%%p*}" "$T/err.txt" || fail "$what: warning: $(cat "$T/err.txt")"
	echo "ok: $what: $(cat "$T/err.txt")"
}

: >"$T/file"
unusable "$T/file/x.%p.dump" "under a regular file"
grep -q "Not a directory" "$T/err.txt" || fail "not ENOTDIR: $(cat "$T/err.txt")"
[ ! -s "$T/file" ] || fail "the regular file was written"

mkdir "$T/ro"
if unshare -m sh -c "mount --bind '$T/ro' '$T/ro' && mount -o remount,bind,ro '$T/ro'" 2>/dev/null; then
	set +e
	unshare -m sh -c "mount --bind '$T/ro' '$T/ro' && mount -o remount,bind,ro '$T/ro' &&
		LD_LIBRARY_PATH='$FAKE' LD_PRELOAD='$PRELOAD' CUMTRACE_OUTPUT='$T/ro/x.%p.dump' \
		'$PROGS/basic' >'$T/traced.txt' 2>'$T/err.txt'"
	rc=$?
	set -e
	expect_eq "read-only mount: exit_code" "$rc" 0
	diff "$T/plain.txt" "$T/traced.txt" || fail "read-only mount: output differs"
	expect_eq "read-only mount: warnings" "$(wc -l <"$T/err.txt" | tr -d ' ')" 1
	grep -q "Read-only file system" "$T/err.txt" || fail "read-only mount: warning: $(cat "$T/err.txt")"
	set -- "$T"/ro/*
	[ ! -e "$1" ] || fail "read-only mount: files appeared: $*"
	echo "ok: read-only mount: $(cat "$T/err.txt")"
else
	echo "skip: read-only bind mount (no private mount namespace here)"
fi

if [ "$(id -u)" != 0 ]; then
	mkdir -m 0500 "$T/r0500"
	unusable "$T/r0500/x.%p.dump" "mode 0500 directory"
	chmod 0700 "$T/r0500"
else
	echo "skip: mode 0500 directory (root ignores it; cases 1 and 2 stand in)"
fi

printf 'precious\n' >"$T/precious"
ln -s "$T/precious" "$T/link.dump"
untraced env LD_PRELOAD="$PRELOAD" CUMTRACE_OUTPUT="$T/link.dump" "$PROGS/basic" >"$T/traced.txt"
diff "$T/plain.txt" "$T/traced.txt" || fail "symlink: output differs"
expect_eq "symlink target content" "$(cat "$T/precious")" precious
[ -L "$T/link.dump" ] || fail "the symlink was replaced"
[ -f "$T/link.dump.1" ] && [ ! -L "$T/link.dump.1" ] || fail "no dump at link.dump.1"
report "$T/l.json" summary "$T/link.dump.1"
expect_eq "symlink: dump at link.dump.1 allocations" "$(jget "$T/l.json" 'j["allocations"]')" 22

mkdir "$T/adir"
unusable "$T/adir/" "an existing directory" timeout 20
grep -q "Is a directory" "$T/err.txt" || fail "not EISDIR: $(cat "$T/err.txt")"
set -- "$T"/adir/* "$T"/adir/.[!.]*
for f in "$@"; do [ ! -e "$f" ] || fail "files appeared in the directory: $*"; done

mkfifo "$T/fifo.dump"
untraced env LD_PRELOAD="$PRELOAD" CUMTRACE_OUTPUT="$T/fifo.dump" timeout 20 "$PROGS/basic" >"$T/traced.txt" ||
	fail "fifo: exit $?"
diff "$T/plain.txt" "$T/traced.txt" || fail "fifo: output differs"
[ -p "$T/fifo.dump" ] && [ -f "$T/fifo.dump.1" ] || fail "fifo: no dump at fifo.dump.1"
echo "ok: FIFO at the output path left alone, dump at fifo.dump.1"

mkdir "$T/real"
ln -s "$T/real" "$T/dirlink"
traced_out="$T/dirlink/d.%p.dump"
untraced env LD_PRELOAD="$PRELOAD" CUMTRACE_OUTPUT="$traced_out" "$PROGS/basic" >/dev/null
set -- "$T"/real/d.*.dump
[ -f "$1" ] || fail "no dump through the directory symlink"
echo "ok: directory symlink followed: $(basename "$1")"
