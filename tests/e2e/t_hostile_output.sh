# Issue 14, item 10: report files (-o). A symbolic link planted where the
# report goes is never followed to a regular file (it once overwrote the
# link's target); reports are created 0600 like the dumps; an existing
# regular file is replaced whole (a temporary file next to it, renamed);
# terminals, pipes and /dev/null are written in place.
. tests/e2e/lib.sh
"$ROOT/$BUILD/gendump" -n 200 -l 50 -t 2 "$T/d.ct" >/dev/null
code() { set +e; "$@" >"$T/out.txt" 2>"$T/err.txt"; echo $?; set -e; }
mode() { stat -c %a "$1"; }

# a planted link to a file of the victim: refused, the file untouched
echo "victim data" >"$T/victim"
chmod 644 "$T/victim"
ln -s "$T/victim" "$T/shared-report.txt"
for cmd in summary leaks html; do
	expect_eq "link: $cmd refused" "$(code "$REPORT" $cmd -o "$T/shared-report.txt" "$T/d.ct")" 2
	expect_eq "link: $cmd: the target untouched" "$(cat "$T/victim")" "victim data"
	expect_eq "link: $cmd: still a link" "$(readlink "$T/shared-report.txt")" "$T/victim"
done
expect_eq "link: message" "$(cat "$T/err.txt")" \
	"cumtrace-report: $T/shared-report.txt: refusing to write through a symbolic link to a regular file"
expect_eq "link: --output= refused" "$(code "$REPORT" leaks --output="$T/shared-report.txt" "$T/d.ct")" 2
# a dangling link: nothing is created at its target
ln -s "$T/created-by-link" "$T/dangling.txt"
expect_eq "dangling link refused" "$(code "$REPORT" summary -o "$T/dangling.txt" "$T/d.ct")" 2
[ ! -e "$T/created-by-link" ] || fail "a file was created through a dangling link"
echo "ok: nothing created through the dangling link"
# nothing left behind by a refusal
expect_eq "no temporary files" "$(ls -A "$T" | grep -c '\.tmp\.' || true)" 0

# a new report: 0600, whatever the umask
expect_eq "new" "$(code "$REPORT" summary -o "$T/new.txt" "$T/d.ct")" 0
expect_eq "new: mode" "$(mode "$T/new.txt")" 600
(umask 0; "$REPORT" leaks --format csv -o "$T/new.csv" "$T/d.ct") || fail "umask 0"
expect_eq "new: mode with umask 0" "$(mode "$T/new.csv")" 600
"$REPORT" summary "$T/d.ct" >"$T/stdout.txt"
cmp -s "$T/new.txt" "$T/stdout.txt" || fail "-o and standard output differ"
echo "ok: -o writes what standard output shows"
# an existing regular file is replaced whole (longer before, shorter after), 0600
head -c 100000 /dev/zero | tr '\0' x >"$T/old.txt"
chmod 644 "$T/old.txt"
expect_eq "replace" "$(code "$REPORT" summary -o "$T/old.txt" "$T/d.ct")" 0
cmp -s "$T/old.txt" "$T/stdout.txt" || fail "the replaced file is not the report"
expect_eq "replace: mode" "$(mode "$T/old.txt")" 600
# not regular files: written in place (a link to one too: /dev/stdout on a pipe)
expect_eq "/dev/null" "$(code "$REPORT" summary -o /dev/null "$T/d.ct")" 0
"$REPORT" summary -o /dev/stdout "$T/d.ct" | cat >"$T/via-link.txt"
cmp -s "$T/via-link.txt" "$T/stdout.txt" || fail "-o /dev/stdout differs"
echo "ok: -o /dev/stdout"
mkfifo "$T/fifo"
cat "$T/fifo" >"$T/from-fifo.txt" &
"$REPORT" summary -o "$T/fifo" "$T/d.ct" || fail "-o FIFO"
wait
cmp -s "$T/from-fifo.txt" "$T/stdout.txt" || fail "-o FIFO differs"
echo "ok: -o FIFO"
# a directory, a missing directory: errors, nothing left behind
expect_eq "directory" "$(code "$REPORT" summary -o "$T" "$T/d.ct")" 2
expect_eq "missing directory" "$(code "$REPORT" summary -o "$T/nodir/r.txt" "$T/d.ct")" 2
expect_eq "no temporary files at the end" "$(ls -A "$T" | grep -c '\.tmp\.' || true)" 0
