# CI outputs of leaks: JUnit XML (Jenkins, GitLab) and SARIF 2.1.0 (GitHub
# code scanning), checked by tests/ci_formats.py against what those consumers
# require, on traced programs and on the golden files; the checker itself
# must refuse broken documents.
. tests/e2e/lib.sh
command -v python3 >/dev/null || { echo "python3 not found"; exit 77; }
CHECK="python3 $ROOT/tests/ci_formats.py"
code() { set +e; "$@" >/dev/null 2>"$T/err.txt"; echo $?; set -e; }
(cd "$T" && traced lc "$PROGS/leak_classes" >/dev/null) # from outside the repository
NVTX_INJECTION64_PATH=$SHIM traced gr "$PROGS/growth" nvtx
traced cl "$PROGS/clean"
traced basic "$PROGS/basic" >/dev/null
dump=$(dump_of lc)
user_line=$(grep -n 'CHECK(cudaMalloc(&p, n));' tests/e2e/progs/leak_classes.c | head -n 1 | cut -d: -f1)
main_cublas=$(grep -n 'fake_cublasCreate(4 \* MiB)' tests/e2e/progs/leak_classes.c | cut -d: -f1)
reset_line=$(grep -n 'CHECK(cudaMalloc(&p, 1 \* MiB)); /\* live at the reset' tests/e2e/progs/leak_classes.c | cut -d: -f1)
torch_line=$(grep -n 'void \*t = fake_torch_empty(2 \* MiB);' tests/e2e/progs/leak_classes.c | cut -d: -f1)

# JUnit: one testcase per site; only the user leak fails by default.
"$REPORT" leaks --format junit -o "$T/l.xml" "$dump"
$CHECK junit "$T/l.xml" >"$T/l.sum" || fail "junit check: $(cat "$T/l.sum")"
expect_eq junit_counts "$(head -n 1 "$T/l.sum")" "tests 5 failures 1 errors 0 skipped 0"
expect_eq junit_cases "$(tail -n +2 "$T/l.sum" | cut -d'|' -f1,3 | sort | tr '\n' ' ')" \
	"cumtrace.cache|passed cumtrace.cache|passed cumtrace.cache|passed cumtrace.leaked|failed cumtrace.teardown|passed "
grep -q '<testcase classname="cumtrace.leaked" name="user_leak (tests/e2e/progs/leak_classes.c:[0-9]*) \[' "$T/l.xml" ||
	fail "no user_leak testcase named by its label"
grep -q '<failure message="leaked: 3.0 MiB in 1 allocation (device, cudaMalloc, live at exit)" type="cumtrace.leaked">' "$T/l.xml" ||
	fail "no failure message"
# Every class fails, one is suppressed (skipped), and the byte budgets are testcases.
printf 'leak:libnccl\n' >"$T/n.supp"
expect_eq junit_all_exit "$(code "$REPORT" leaks --format junit --fail-on=all --suppressions "$T/n.supp" \
	--max-peak-bytes 15M --max-leak-bytes 1G -o "$T/all.xml" "$dump")" 1
$CHECK junit "$T/all.xml" >"$T/all.sum" || fail "junit check: $(cat "$T/all.sum")"
expect_eq junit_all_counts "$(head -n 1 "$T/all.sum")" "tests 7 failures 5 errors 0 skipped 1"
expect_eq junit_gate_cases "$(grep '^cumtrace.gate' "$T/all.sum" | tr '\n' ' ')" \
	"cumtrace.gate|max-peak-bytes|failed cumtrace.gate|max-leak-bytes|passed "
# Two dumps: one suite each, names stay unique.
cp "$dump" "$T/copy.dump" # a copy: the same file twice is refused
"$REPORT" leaks --format junit -o "$T/two.xml" "$dump" "$T/copy.dump"
$CHECK junit "$T/two.xml" >"$T/two.sum" || fail "junit check of two dumps: $(cat "$T/err.txt")"
expect_eq junit_two "$(head -n 1 "$T/two.sum")" "tests 10 failures 2 errors 0 skipped 0"
expect_eq junit_two_suites "$(grep -c '<testsuite ' "$T/two.xml")" 2
# A clean run is one passing testcase, not an empty suite (Jenkins and GitLab show that as no tests).
"$REPORT" leaks --format junit --fail-on-leak -o "$T/clean.xml" "$(dump_of cl)"
$CHECK junit "$T/clean.xml" >"$T/clean.sum" || fail "junit check of a clean run: $(cat "$T/err.txt")"
expect_eq junit_clean "$(tr '\n' ' ' <"$T/clean.sum")" "tests 1 failures 0 errors 0 skipped 0 cumtrace|no leaks|passed "
cp "$(dump_of cl)" "$T/cl-copy.dump"
"$REPORT" leaks --format junit -o "$T/clean2.xml" "$(dump_of cl)" "$T/cl-copy.dump"
$CHECK junit "$T/clean2.xml" >"$T/clean2.sum" || fail "junit check of two clean runs: $(cat "$T/err.txt")"
expect_eq junit_clean_two "$(tail -n +2 "$T/clean2.sum" | tr '\n' ' ')" "cumtrace.dump1|no leaks|passed cumtrace.dump2|no leaks|passed "
# Growth sites are testcases too.
expect_eq junit_growth_exit "$(code "$REPORT" leaks --format junit --fail-on=growth -o "$T/g.xml" "$(dump_of gr)")" 1
$CHECK junit "$T/g.xml" >"$T/g.sum" || fail "junit check: $(cat "$T/err.txt")"
expect_eq junit_growth "$(grep '^cumtrace.growth' "$T/g.sum" | cut -d'|' -f1,3)" "cumtrace.growth|failed"

# SARIF: a result per site that has a frame of the program's own code, at that frame's file and line.
"$REPORT" leaks --format sarif -o "$T/l.sarif" "$dump"
$CHECK sarif "$T/l.sarif" >"$T/s.sum" || fail "sarif check: $(cat "$T/err.txt")"
# (debug info names the file relative to the compilation directory: so does the URI)
src=tests/e2e/progs/leak_classes.c
expect_eq sarif_results "$(sort "$T/s.sum" | tr '\n' ' ')" \
	"$(printf '%s\n' "cumtrace/cache|note|$src:$main_cublas|-" "cumtrace/cache|note|$src:$main_cublas|-" \
		"cumtrace/cache|note|$src:$torch_line|-" "cumtrace/leaked|error|$src:$user_line|-" \
		"cumtrace/teardown|note|$src:$reset_line|-" "results 5" | sort | tr '\n' ' ')"
# Python files are absolute: relative to the traced process's cwd when below it, else file:// URIs.
script=$ROOT/tests/e2e/py_growth.py
py_line=$(grep -n 'GROWTH-LINE' "$script" | cut -d: -f1)
traced pyin python3 "$script" "$FAKE" "$ROOT/$BUILD/tests/libs"
(cd "$T" && traced pyout python3 "$script" "$FAKE" "$ROOT/$BUILD/tests/libs")
for w in pyin pyout; do
	expect_eq "sarif_${w}_exit" "$(code "$REPORT" leaks --format sarif --fail-on=growth -o "$T/$w.sarif" "$(dump_of $w)")" 1
	$CHECK sarif "$T/$w.sarif" >"$T/$w.sum" || fail "sarif check: $(cat "$T/err.txt")"
done
expect_eq sarif_python_relative "$(grep '^cumtrace/growth' "$T/pyin.sum")" "cumtrace/growth|error|tests/e2e/py_growth.py:$py_line|-"
expect_eq sarif_python_absolute "$(grep '^cumtrace/growth' "$T/pyout.sum")" "cumtrace/growth|error|file://$script:$py_line|-"
# Run from the repository root, with every class failing and a suppression.
(cd "$ROOT" && LD_LIBRARY_PATH=$FAKE LD_PRELOAD=$PRELOAD CUMTRACE_OUTPUT="$T/rel.%p.dump" "$PROGS/leak_classes")
expect_eq sarif_all_exit "$(code "$REPORT" leaks --format sarif --fail-on=all --suppressions "$T/n.supp" \
	-o "$T/rel.sarif" "$(dump_of rel)")" 1
$CHECK sarif "$T/rel.sarif" >"$T/rel.sum" || fail "sarif check: $(cat "$T/err.txt")"
expect_eq sarif_relative "$(grep '^cumtrace/leaked' "$T/rel.sum")" \
	"cumtrace/leaked|error|tests/e2e/progs/leak_classes.c:$user_line|-"
expect_eq sarif_suppressed "$(grep -c '|suppressed$' "$T/rel.sum")" 1
expect_eq sarif_levels "$(grep -c '|error|' "$T/rel.sum")" 4
expect_eq sarif_rules "$(jget "$T/rel.sarif" '[r["id"] for r in j["runs"][0]["tool"]["driver"]["rules"]]')" \
	"['cumtrace/leaked', 'cumtrace/cache', 'cumtrace/teardown', 'cumtrace/growth']"
expect_eq sarif_fingerprint "$(jget "$T/rel.sarif" 'len(set(r["partialFingerprints"]["cumtraceSite/v1"] for r in j["runs"][0]["results"]))')" 5
# A site without any frame of the user's code is not a result (GitHub would refuse the file): a notification counts it.
"$REPORT" leaks --format sarif --no-symbols -o "$T/ns.sarif" "$dump"
$CHECK sarif "$T/ns.sarif" >"$T/ns.sum" || fail "sarif check: $(cat "$T/err.txt")"
expect_eq sarif_no_symbols "$(head -n 1 "$T/ns.sum")" "results 0"
expect_eq sarif_notification "$(jget "$T/ns.sarif" 'j["runs"][0]["invocations"][0]["toolExecutionNotifications"][0]["message"]["text"]')" \
	"5 of 5 sites have no frame of the program's own code with a file and a line and are not results here (cumtrace-report leaks lists them)"
expect_eq sarif_growth_exit "$(code "$REPORT" leaks --format sarif --fail-on=growth -o "$T/g.sarif" "$(dump_of gr)")" 1
$CHECK sarif "$T/g.sarif" >"$T/gs.sum" || fail "sarif check: $(cat "$T/err.txt")"
expect_eq sarif_growth "$(grep '^cumtrace/growth' "$T/gs.sum" | cut -d'|' -f1,2)" "cumtrace/growth|error"

# SARIF rules carry help (GitHub requires it: GH2012) and a helpUri; the driver an informationUri.
expect_eq sarif_help "$(jget "$T/rel.sarif" 'all(r["help"]["text"] and r["helpUri"].endswith(("#leak-classes", "#growth-leaks")) for r in j["runs"][0]["tool"]["driver"]["rules"])')" True
expect_eq sarif_information_uri "$(jget "$T/rel.sarif" 'j["runs"][0]["tool"]["driver"]["informationUri"].endswith("/report.md")')" True
# Fingerprints: basic leaks from leak_device twice on device 0 and once on device 1 (one chain of functions):
# two fingerprints; a device-0 site's is its identity, as in earlier versions.
"$REPORT" leaks --format sarif -o "$T/b.sarif" "$(dump_of basic)"
$CHECK sarif "$T/b.sarif" >/dev/null || fail "sarif check of basic: $(cat "$T/err.txt")"
report "$T/b.json" leaks --top 0 "$(dump_of basic)"
expect_eq sarif_fingerprint_devices "$(python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))["runs"][0]["results"]
ids = {(s["device"], s["identity"]) for s in json.load(open(sys.argv[2]))["leaks"]["sites"]}
d = [(x["properties"]["device"], x["partialFingerprints"]["cumtraceSite/v1"]) for x in r
     if "leak_device" in x["stacks"][0]["frames"][0]["location"]["message"]["text"]]
print(sorted(dev for dev, _ in d), len({f for _, f in d}), all((dev, f) in ids for dev, f in d if dev == 0),
      any((dev, f) in ids for dev, f in d if dev != 0))' "$T/b.sarif" "$T/b.json")" "[0, 0, 1] 2 True False"
# The SARIF 2.1.0 schema (tests/data/, from the SARIF Multitool's npm package) accepts the
# files, and refuses a broken one.
set +e
python3 "$ROOT/tests/schemas.py" sarif "$T/rel.sarif" 2>"$T/schema.txt"
rc=$?
set -e
schema_ok=0
case $rc in
0) echo "ok: SARIF schema accepts rel.sarif" && schema_ok=1 ;;
77) echo "skip: SARIF schema: $(cat "$T/schema.txt")" ;;
*) fail "SARIF schema refused rel.sarif: $(head -n 3 "$T/schema.txt")" ;;
esac
# The SARIF Multitool (npm @microsoft/sarif-multitool, as scripts/install-deps.sh installs it),
# GitHub's rules included: no error, no warning.
# (its own executable: the npm wrapper hands its arguments to a shell, which splits "Sarif;Gh")
mt=
command -v node >/dev/null && command -v npm >/dev/null &&
	mt=$(NODE_PATH=$(npm root -g 2>/dev/null) node -e 'console.log(require("@microsoft/sarif-multitool"))' 2>/dev/null) || mt=
if [ -n "$mt" ] && [ -x "$mt" ]; then
	# one run over every file, and one without a rule's help that it must refuse (GH2012)
	python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); del d["runs"][0]["tool"]["driver"]["rules"][0]["help"]
json.dump(d, open(sys.argv[2], "w"))' "$T/rel.sarif" "$T/nohelp.sarif"
	"$mt" validate --rule-kind "Sarif;Gh" -o "$T/mt.sarif" "$T/l.sarif" "$T/rel.sarif" "$T/g.sarif" "$T/b.sarif" \
		"$T/pyin.sarif" "$T/nohelp.sarif" >"$T/mt.txt" 2>&1 || fail "SARIF Multitool failed: $(tail -n 3 "$T/mt.txt")"
	expect_eq "SARIF Multitool: errors and warnings, by file" \
		"$(jget "$T/mt.sarif" 'sorted(set((r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].rsplit("/", 1)[1], r.get("level", "warning"), r["ruleId"]) for r in j["runs"][0]["results"] if r.get("level", "warning") in ("error", "warning")))')" \
		"[('nohelp.sarif', 'error', 'GH2012')]"
else
	echo "skip: SARIF Multitool not installed (npm install -g @microsoft/sarif-multitool: scripts/install-deps.sh)"
fi

# The golden files pass too.
for f in tests/golden/*.junit.xml; do $CHECK junit "$f" >/dev/null || fail "golden $f"; done
for f in tests/golden/*.sarif; do $CHECK sarif "$f" >/dev/null || fail "golden $f"; done
echo "ok: golden files"

# The checker refuses what the consumers refuse.
mutate() { # FILE PYTHON-STATEMENT-ON-d OUT (JSON documents)
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); exec(sys.argv[2]); json.dump(d, open(sys.argv[3], "w"))' "$1" "$2" "$3"
}
r0='d["runs"][0]["results"][0]'
for m in 'd["version"]="2.0.0"' 'del d["$schema"]' 'del d["runs"][0]["tool"]["driver"]["name"]' \
	"del $r0[\"ruleId\"]" "$r0[\"message\"]={}" "$r0[\"locations\"]=[]" "del $r0[\"locations\"]" \
	"$r0[\"locations\"][0][\"physicalLocation\"][\"region\"][\"startLine\"]=0" \
	"del $r0[\"locations\"][0][\"physicalLocation\"][\"artifactLocation\"]" \
	"$r0[\"ruleId\"]=\"cumtrace/other\"" "$r0[\"ruleIndex\"]=2" \
	'del d["runs"][0]["tool"]["driver"]["rules"][1]["help"]'; do
	mutate "$T/rel.sarif" "$m" "$T/bad.sarif"
	expect_eq "checker refuses: $m" "$(code $CHECK sarif "$T/bad.sarif")" 1
done
# what only the schema refuses
if [ "$schema_ok" = 1 ]; then
	for m in "$r0[\"level\"]=\"fatal\"" "$r0[\"partialFingerprints\"]=[\"x\"]" 'd["runs"][0]["tool"]["driver"]["informationUri"]=7'; do
		mutate "$T/rel.sarif" "$m" "$T/bad.sarif"
		expect_eq "checker refuses (SARIF schema): $m" "$(code $CHECK sarif "$T/bad.sarif")" 1
	done
fi
junit_refuses() { # WHAT SED-SCRIPT: the checker refuses l.xml so edited
	sed "$2" "$T/l.xml" >"$T/bad.xml"
	expect_eq "checker refuses: $1" "$(code $CHECK junit "$T/bad.xml")" 1
}
junit_refuses "no classname" 's/classname="cumtrace.leaked"//'
junit_refuses "failure without message" 's/<failure message="[^"]*"/<failure/'
junit_refuses "wrong count" 's/ tests="5"/ tests="4"/'
python3 -c '
import sys, xml.etree.ElementTree as ET
t = ET.parse(sys.argv[1]); c = t.getroot().findall(".//testcase")
c[1].set("classname", c[0].get("classname")); c[1].set("name", c[0].get("name"))
t.write(sys.argv[2])' "$T/l.xml" "$T/bad.xml"
expect_eq "checker refuses: duplicate testcase" "$(code $CHECK junit "$T/bad.xml")" 1
# ... and what junit-10.xsd (the Jenkins xunit plugin's schema) refuses.
junit_refuses "skipped on testsuites" 's/<testsuites name="cumtrace leaks"/<testsuites skipped="0" name="cumtrace leaks"/'
grep -q 'attribute skipped is not allowed on <testsuites>' "$T/err.txt" || fail "no junit-10.xsd reason: $(cat "$T/err.txt")"
junit_refuses "an attribute testcase does not have" '0,/<testcase /s//<testcase status="run" /'
junit_refuses "an element testcase does not hold" '0,/<\/testcase>/s//<note\/><\/testcase>/'
junit_refuses "a testsuite without a name" '0,/<testsuite name="\([^"]*\)" tests="5"/s//<testsuite tests="5"/'
junit_refuses "a time that is not a SUREFIRE_TIME" '0,/ time="0" hostname=/s// time="1s" hostname=/'
head -c 200 "$T/l.xml" >"$T/bad.xml"
expect_eq "checker refuses: broken XML" "$(code $CHECK junit "$T/bad.xml")" 1
