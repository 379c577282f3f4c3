# The CI examples of docs/ci/ (issue 18, "CI examples"): the GitHub Actions workflow and
# the GitLab job parse as YAML and have what their services require (tests/ci_examples.py);
# their gate and report commands, as written, run against the fake CUDA runtime with the
# build's cumtrace on PATH and write SARIF and JUnit that tests/ci_formats.py accepts.
# Checkout, the build from source and the uploads need the services: not run here.
. tests/e2e/lib.sh
command -v python3 >/dev/null || { echo "python3 not found"; exit 77; }
python3 -c 'import yaml' 2>/dev/null || { echo "PyYAML not found (Debian: python3-yaml)"; exit 77; }
CHECK="python3 $ROOT/tests/ci_examples.py"
FORMATS="python3 $ROOT/tests/ci_formats.py"
code() { set +e; "$@" >/dev/null 2>"$T/err.txt"; echo $?; set -e; }
mkdir "$T/bin"
ln -s "$ROOT/$BUILD/cumtrace" "$T/bin/cumtrace"
ln -s "$REPORT" "$T/bin/cumtrace-report"

# run_example KIND PROGRAM: the example's commands in a fresh checkout folder, the tests
# being PROGRAM; the gate's exit status in $gate_rc, the report's file in $out
run_example() {
	w=$T/$1.$(basename "$2")
	mkdir "$w"
	$CHECK "$1" "docs/ci/$1-$(test "$1" = github && echo actions || echo ci).yml" "$w" >"$w/summary" ||
		fail "$1 example: $(cat "$w/summary")"
	out=$w/$(head -n 1 "$w/summary")
	shell='sh'
	[ "$1" = github ] && shell=bash # GitHub's run: is bash -e {0}; GitLab's runner, a POSIX shell
	set +e
	(cd "$w" && PATH=$T/bin:$PATH TEST_COMMAND=$2 LD_LIBRARY_PATH=$FAKE "$shell" -e gate.sh >gate.out 2>&1)
	gate_rc=$?
	(cd "$w" && PATH=$T/bin:$PATH "$shell" -e report.sh >report.out 2>&1) || fail "$1 report: $(cat "$w/report.out")"
	set -e
}

# GitHub: the gate fails on leak_classes' user leak (exit 23), SARIF says where.
run_example github "$PROGS/leak_classes"
expect_eq github_gate "$gate_rc" 23
$FORMATS sarif "$out" >"$T/gh.sum" || fail "SARIF of the workflow refused"
expect_eq github_sarif_leaked "$(grep -c '^cumtrace/leaked|error|tests/e2e/progs/leak_classes.c:' "$T/gh.sum")" 1
run_example github "$PROGS/clean"
expect_eq github_gate_clean "$gate_rc" 0
$FORMATS sarif "$out" >"$T/ghc.sum" || fail "SARIF of the workflow refused"
expect_eq github_sarif_clean "$(head -n 1 "$T/ghc.sum")" "results 0"

# GitLab: the same gate, and JUnit with the leaked site failed.
run_example gitlab "$PROGS/leak_classes"
expect_eq gitlab_gate "$gate_rc" 23
$FORMATS junit "$out" >"$T/gl.sum" || fail "JUnit of the job refused"
expect_eq gitlab_junit "$(head -n 1 "$T/gl.sum")" "tests 5 failures 1 errors 0 skipped 0"
run_example gitlab "$PROGS/clean"
expect_eq gitlab_gate_clean "$gate_rc" 0
$FORMATS junit "$out" >"$T/glc.sum" || fail "JUnit of the job refused"
expect_eq gitlab_junit_clean "$(tr '\n' ' ' <"$T/glc.sum")" "tests 1 failures 0 errors 0 skipped 0 cumtrace|no leaks|passed "

# The checker refuses what the services (or the gate) would not take (all the changed
# files in one python3: its start-up would be most of the test's time).
python3 - >"$T/refused" <<'PY' || fail "the checker took a wrong file: $(cat "$T/refused")"
import sys, yaml
sys.path.insert(0, "tests")
import ci_examples
gh, gl = 'd["jobs"]["cumtrace"]', 'd["cumtrace"]'
changes = [("github", "docs/ci/github-actions.yml", m) for m in (
    "del %s['runs-on']" % gh, "%s['steps'] = []" % gh, "del d['permissions']['security-events']",
    "%s['steps'][0]['run'] = 'true'" % gh, "del %s['steps'][3]['if']" % gh,
    "%s['steps'][2]['run'] = 'cumtrace run -- x'" % gh, "%s['steps'][4]['with']['sarif_file'] = 'other.sarif'" % gh,
    "%s['steps'][4]['uses'] = 'github/codeql-action/upload-sarif'" % gh, "del d[True]")] + \
    [("gitlab", "docs/ci/gitlab-ci.yml", m) for m in (
    "del %s['script']" % gl, "%s['stage'] = 'build'" % gl, "del %s['artifacts']['reports']" % gl,
    "del %s['artifacts']['when']" % gl, "del %s['after_script']" % gl,
    "%s['artifacts']['reports']['junit'] = 'x.xml'" % gl, "%s['script'] = [1]" % gl)]
took = 0
for kind, path, change in changes:
    d = yaml.safe_load(open(path))
    exec(change)
    errs = []
    getattr(ci_examples, kind)(d, errs)
    print("%s: %s: %s" % (kind, change, errs[0] if errs else "TAKEN"))
    took += not errs
sys.exit(took)
PY
cat "$T/refused"
printf 'jobs:\n  a: [\n' >"$T/bad.yml"
expect_eq "checker refuses: not YAML" "$(code $CHECK github "$T/bad.yml" "$T")" 1
