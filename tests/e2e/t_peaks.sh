# The peak report per device (two devices: each its own moment and live set by
# site) and per phase (NVTX ranges, cumtrace ranges and the spans between
# cumtrace_mark instants).
. tests/e2e/lib.sh
. tests/e2e/paths_lib.sh
MiB=1048576
traced dev "$PROGS/peak_devices" >/dev/null || fail "peak_devices failed"
report "$T/d.json" peak "$(dump_of dev)"
P='j["peak"]'
soft expect_eq all_devices "$(jget "$T/d.json" "($P['bytes'], sorted($P['device_bytes'].items()))")" \
	"($((14 * MiB)), [('0', $((8 * MiB))), ('1', $((6 * MiB)))])"
soft expect_eq per_device \
	"$(jget "$T/d.json" "[(d['device'], d['bytes'], [(s['bytes'], s['stack'][0]['function']) for s in d['sites']]) for d in $P['devices']]")" \
	"[(0, $((8 * MiB)), [($((5 * MiB)), 'site_b'), ($((3 * MiB)), 'site_a')]), (1, $((10 * MiB)), [($((6 * MiB)), 'site_c'), ($((4 * MiB)), 'site_d')])]"
# Device 0 peaks first, then all devices (site C), then device 1 (site D).
soft expect_eq order "$(jget "$T/d.json" "$P['devices'][0]['time_ns'] < $P['time_ns'] < $P['devices'][1]['time_ns']")" True
"$REPORT" peak "$(dump_of dev)" >"$T/d.txt" || fail "text report"
soft grep -q "^device 0: peak 8.0 MiB (8388608 bytes) at " "$T/d.txt"
soft grep -q "^device 1: peak 10.0 MiB (10485760 bytes) at " "$T/d.txt"
"$REPORT" peak --format csv "$(dump_of dev)" >"$T/d.csv" || fail "csv report"
soft expect_eq csv_device_rows "$(awk -F, '$NF == "device" { print $5 ":" $3 }' "$T/d.csv" | tr '\n' ' ')" \
	"0:$((5 * MiB)) 0:$((3 * MiB)) 1:$((6 * MiB)) 1:$((4 * MiB)) "

NVTX_INJECTION64_PATH=$SHIM traced ph "$PROGS/peak_phases" >/dev/null || fail "peak_phases failed"
report "$T/p.json" peak "$(dump_of ph)"
soft expect_eq phases \
	"$(jget "$T/p.json" "[(p['kind'], p['name'], p['count'], p['peak_bytes'], p['start_bytes'], p['growth_bytes'], p['open_at_end']) for p in $P['phases']]")" \
	"[('mark', 'load', 1, $((5 * MiB)), 0, $((5 * MiB)), 0), ('range', 'fwd', 2, $((5 * MiB)), $MiB, $((4 * MiB)), 0), ('mark', 'step', 1, $((3 * MiB)), $MiB, $((2 * MiB)), 0), ('range', 'io', 1, $((3 * MiB / 2)), $MiB, $((MiB / 2)), 0), ('start', '', 1, 0, 0, 0, 0)]"
soft expect_eq phase_times \
	"$(jget "$T/p.json" "len(set([$P['time_ns']] + [p['peak_time_ns'] for p in $P['phases'] if p['name'] in ('load', 'fwd')]))")" 1
"$REPORT" peak "$(dump_of ph)" >"$T/p.txt" || fail "text report"
soft grep -q '^  5.0 MiB  .* +4.0 MiB       2  range "fwd"$' "$T/p.txt"
# the headline names the range and the mark span the peak fell in (issue 17)
soft grep -q '^cumtrace peak: 5.0 MiB (5242880 bytes) of device memory at [0-9.]* ms, in range "fwd", after mark "load" in pid ' "$T/p.txt"
soft expect_eq "headline peak" "$("$REPORT" headline "$(dump_of ph)" | sed -n 's/ at [0-9.]* ms/ at T ms/; /^peak: /p')" \
	'peak: 5.0 MiB at T ms, in range "fwd", after mark "load"; top site 4.0 MiB at peak_phases.c:49 in main'
finish
