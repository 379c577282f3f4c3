# Issue 14.5, second attack: a signal handler allocates (an allocation wants a
# native stack) while the thread it interrupted is inside dlopen or dlclose of
# a library with thread-local data, so may hold the loader's lock or malloc's:
# unwinding there (libunwind: dl_iterate_phdr, __tls_get_addr's slow path,
# which may call free) deadlocked. A second thread signals without pause; the
# handler blocks SIGTERM. Three runs of 3000 dlopen/dlclose each must end, and
# every call be recorded (without a stack, as made inside a handler) or
# counted.
. tests/e2e/lib.sh
. tests/e2e/sig_lib.sh
# Under a sanitizer one run: the deadlock is hunted by the plain pass's three, the
# sanitizer checks what one run does.
runs="1 2 3"
if sanitized_build; then
	runs=1
fi
for run in $runs; do
	sig_run "dl$run" 30 dlopen 3000 "$ROOT/$BUILD/tests/libs/libcttls.so"
	sig_counts "dl$run"
	rm -f "$(dump_of "dl$run")"
done
