#!/bin/sh
# Install what building and testing cumtrace needs, from Debian packages.
# Idempotent: installs only what is missing. Needs root (or sudo). chromium: the
# html report's browser test (tests/e2e/t_html_chromium.sh); groff-base, man-db: the
# man pages' checks (t_man, t_install); python3-yaml: the CI examples' (t_ci_examples);
# python3-pytest: the pytest plugin's test (tests/e2e/t_pytest.sh).
set -eu
pkgs="build-essential pkg-config libunwind-dev check libdw-dev libelf-dev libzstd-dev python3 python3-pytest clang libclang-rt-14-dev valgrind chromium groff-base man-db python3-yaml"
missing=
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -z "$missing" ]; then
	echo "install-deps: all present:$(printf ' %s' $pkgs)"
	exit 0
fi
sudo=
[ "$(id -u)" -eq 0 ] || sudo=sudo
echo "install-deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
# shellcheck disable=SC2086
$sudo apt-get install -y --no-install-recommends $missing || {
	$sudo apt-get update
	# shellcheck disable=SC2086
	$sudo apt-get install -y --no-install-recommends $missing
}
