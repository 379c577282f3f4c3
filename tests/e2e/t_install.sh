# make install and make uninstall (issue 18, "Packaging"): into a temporary PREFIX every
# file lands where README.md says, the installed wrapper traces a program and gates,
# cumtrace-report runs, man finds and renders the pages, pkg-config's cumtrace.pc builds
# a program of the C API (tests/e2e/pc_api.c) that runs traced and untraced; uninstall
# leaves the tree as it found it. Again into a staging root (DESTDIR, PREFIX=/usr/local)
# that holds files of others. It installs the build it runs under and never builds one.
. tests/e2e/lib.sh
if sanitized_build; then
	echo "not under a sanitizer: make install takes the plain build"
	exit 77
fi
for tool in make pkg-config man groff python3; do
	command -v $tool >/dev/null || { echo "$tool not found"; exit 77; }
done
# make of the build this test runs under, not of a make that may have started the tests
mk() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$ROOT" BUILD="$BUILD" SANITIZE= "$@" >/dev/null; }
mk -q all || fail "$BUILD is not up to date: run make first (this test does not build)"
version=$(sed -n 's/^VERSION := //p' Makefile)
tree() { (cd "$1" && find . | LC_ALL=C sort); }
expected() { # SITE: the files make install writes below the prefix, SITE its PYTHON_SITE there
	printf './%s\n' bin/ctdump.py bin/cumtrace bin/cumtrace-report lib/libcumtrace.so \
		lib/pkgconfig/cumtrace.pc share/man/man1/cumtrace.1 share/man/man1/cumtrace-report.1
	for h in include/cumtrace/*.h; do echo "./$h"; done
	for py in python/cumtrace/*.py; do printf './lib/cumtrace/%s\n./%s/cumtrace/%s\n' "$py" "$1" "${py##*/}"; done
	printf './%s/cumtrace-%s.dist-info/%s\n' "$1" "$version" METADATA "$1" "$version" entry_points.txt
}
files() { # DIR: the files below DIR, but those of others
	(cd "$1" && find . -type f ! -name 'other*' | LC_ALL=C sort | tr '\n' ' ')
}

# ---- PREFIX: a folder of its own
P=$T/usr
SITE=lib/python3/dist-packages
mkdir "$P"
before=$(tree "$P")
mk install PREFIX="$P" PYTHON_SITE="$P/$SITE"
expect_eq installed "$(files "$P")" "$(expected $SITE | LC_ALL=C sort | tr '\n' ' ')"
expect_eq modes "$(cd "$P" && stat -c %a bin/cumtrace bin/cumtrace-report lib/libcumtrace.so \
	include/cumtrace/cumtrace.h lib/pkgconfig/cumtrace.pc share/man/man1/cumtrace.1 | tr '\n' ' ')" \
	"755 755 755 644 644 644 "
expect_eq version "$("$P/bin/cumtrace" --version)" "cumtrace $version"
expect_eq report_help "$("$P/bin/cumtrace-report" --help | head -n 1)" "usage: cumtrace-report [COMMAND] [options] DUMP..."
# The installed wrapper finds the installed shim and report: basic leaks, the gate fails.
set +e
(cd "$T" && LD_LIBRARY_PATH=$FAKE "$P/bin/cumtrace" run -q --no-summary --fail-on-leak -o "$T/inst.%p.dump" -- "$PROGS/basic" >/dev/null 2>"$T/run.err")
expect_eq installed_gate "$?" 1
set -e
grep -qx "LIBDIR=$P/lib" "$P/bin/cumtrace" || fail "the wrapper does not name the installed shim"
[ -f "$(dump_of inst)" ] || fail "no dump: $(cat "$T/run.err")"
# man finds the pages where they were installed; they render without a warning.
expect_eq man_path "$(man -M "$P/share/man" -w cumtrace-report)" "$P/share/man/man1/cumtrace-report.1"
for page in cumtrace cumtrace-report; do
	MANWIDTH=80 man --warnings -M "$P/share/man" "$page" >"$T/$page.txt" 2>"$T/$page.err" || fail "man $page: $(cat "$T/$page.err")"
	[ ! -s "$T/$page.err" ] || fail "man $page warns: $(cat "$T/$page.err")"
	if ! grep -q '^GATE OPTIONS' "$T/$page.txt" || ! grep -q -- '--fail-on-leak' "$T/$page.txt"; then
		fail "man $page: $(head -n 5 "$T/$page.txt")"
	fi
done
# pkg-config: the C API's flags; a program built with them, its header the installed one.
export PKG_CONFIG_PATH="$P/lib/pkgconfig"
expect_eq pc_flags "$(pkg-config --cflags --libs cumtrace | sed 's/ *$//')" "-I$P/include -ldl"
expect_eq pc_version "$(pkg-config --modversion cumtrace)" "$version"
shim=$(pkg-config --variable=shim cumtrace)
expect_eq pc_shim "$shim" "$P/lib/libcumtrace.so"
cc=${CC:-cc}
$cc -std=gnu11 -M $(pkg-config --cflags cumtrace) tests/e2e/pc_api.c | grep -q "$P/include/cumtrace/cumtrace.h" ||
	fail "pc_api.c does not include the installed header"
$cc -std=gnu11 -Wall -Wextra -Werror $(pkg-config --cflags cumtrace) -o "$T/pc_api" tests/e2e/pc_api.c $(pkg-config --libs cumtrace)
expect_eq pc_untraced "$("$T/pc_api")" "untraced"
expect_eq pc_traced "$(LD_PRELOAD=$shim CUMTRACE_OUTPUT="$T/pc.%p.dump" "$T/pc_api")" "traced $version active 1 step 1"
"$P/bin/cumtrace-report" summary --format json -o "$T/pc.json" "$(dump_of pc)"
expect_eq pc_mark "$(jget "$T/pc.json" '[m["name"] for m in j["marks"]]')" "['pc_api']"
expect_eq python_site "$(cd "$T" && PYTHONPATH=$P/$SITE python3 -c 'import cumtrace; print(cumtrace.__file__)')" \
	"$P/$SITE/cumtrace/__init__.py"
mk uninstall PREFIX="$P" PYTHON_SITE="$P/$SITE"
expect_eq uninstalled "$(tree "$P")" "$before"

# ---- DESTDIR: a staging root, PREFIX=/usr/local, beside files of others
S=$T/stage
L=$S/usr/local
mkdir -p "$L/bin" "$L/share/man/man1"
echo other >"$L/bin/other"
echo '.TH OTHER 1' >"$L/share/man/man1/other.1"
before=$(tree "$S")
mk install DESTDIR="$S" PREFIX=/usr/local PYTHON_SITE=/usr/local/$SITE
expect_eq staged "$(files "$L")" "$(expected $SITE | LC_ALL=C sort | tr '\n' ' ')"
grep -qx 'prefix=/usr/local' "$L/lib/pkgconfig/cumtrace.pc" || fail "cumtrace.pc: $(head -n 8 "$L/lib/pkgconfig/cumtrace.pc")"
grep -qx 'LIBDIR=/usr/local/lib' "$L/bin/cumtrace" || fail "the staged wrapper does not name /usr/local/lib"
mk uninstall DESTDIR="$S" PREFIX=/usr/local PYTHON_SITE=/usr/local/$SITE
expect_eq staged_uninstalled "$(tree "$S")" "$before"
