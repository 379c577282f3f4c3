# cudaDeviceReset is a leak checkpoint.
. tests/e2e/lib.sh
traced reset "$PROGS/reset"
report "$T/l.json" leaks "$(dump_of reset)"
expect_eq leak_count "$(jget "$T/l.json" 'j["leaks"]["count"]')" 2
expect_eq reasons "$(jget "$T/l.json" 'sorted((s["bytes"], s["reason"]) for s in j["leaks"]["sites"])')" \
	"[(4096, 'live at exit'), (1048576, 'live at cudaDeviceReset')]"
