#!/bin/sh
# Install what building and testing cumtrace needs, from Debian packages.
# Idempotent: installs only what is missing. Needs root (or sudo). chromium: the
# html report's browser test (tests/e2e/t_html_chromium.sh); groff-base, man-db: the
# man pages' checks (t_man, t_install); python3-yaml: the CI examples' (t_ci_examples);
# python3-pytest: the pytest plugin's test (tests/e2e/t_pytest.sh); python3-jsonschema:
# the SARIF and speedscope schemas' checks (tests/schemas.py, for /usr/bin/python3 when
# the python3 first on PATH has no jsonschema).
# Then, from npm where npm is there, the SARIF Multitool (@microsoft/sarif-multitool, a
# self-contained Linux program of about 45 MB, a few seconds to install), whose validate
# t_ci_formats runs with GitHub's rules; without it that step of the test is skipped.
set -eu
pkgs="build-essential pkg-config libunwind-dev check libdw-dev libelf-dev libzstd-dev python3 python3-pytest clang libclang-rt-14-dev valgrind chromium groff-base man-db python3-yaml python3-jsonschema"
sarif_multitool=@microsoft/sarif-multitool@5.7.0
sudo=
[ "$(id -u)" -eq 0 ] || sudo=sudo
missing=
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -z "$missing" ]; then
	echo "install-deps: all present:$(printf ' %s' $pkgs)"
else
	echo "install-deps: installing$missing"
	export DEBIAN_FRONTEND=noninteractive
	# shellcheck disable=SC2086
	$sudo apt-get install -y --no-install-recommends $missing || {
		$sudo apt-get update
		# shellcheck disable=SC2086
		$sudo apt-get install -y --no-install-recommends $missing
	}
fi
if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
	echo "install-deps: no npm: the SARIF Multitool is not installed (t_ci_formats skips that step)"
elif NODE_PATH=$(npm root -g) node -e 'require("@microsoft/sarif-multitool")' 2>/dev/null; then
	echo "install-deps: SARIF Multitool present"
elif $sudo npm install -g --no-audit --no-fund "$sarif_multitool" >/dev/null 2>&1; then
	echo "install-deps: installed $sarif_multitool"
else
	echo "install-deps: could not install $sarif_multitool from npm (t_ci_formats skips that step)"
fi
