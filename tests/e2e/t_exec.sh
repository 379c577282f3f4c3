# exec: tracing continues in the new image, which writes its own dump.
. tests/e2e/lib.sh
traced exec "$PROGS/execer"
set -- "$T"/exec.*.dump*
expect_eq dumps $# 2
report "$T/a.json" leaks "$1"
report "$T/b.json" leaks "$2"
expect_eq leak_bytes "$(jget "$T/a.json" 'j["leaks"]["bytes"]') $(jget "$T/b.json" 'j["leaks"]["bytes"]')" \
	"1048576 2097152"
