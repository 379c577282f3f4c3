#!/usr/bin/env bash
# Other builds of the shim for the batch step selftime-variants (tests/gpu/selftime_variants.sh),
# after scripts/gpu-pack.sh: each NAME=SOURCE argument builds libcumtrace.so from SOURCE and puts
# it at gpu-kit/variants/NAME.so. SOURCE is a commit (the shim of that commit), a patch file
# (this checkout's HEAD with the patch applied) or COMMIT+PATCH (that commit with the patch: e.g.
# an older shim given cumtrace_bench_pause, which tests/gpu/fw_overhead_pair.py needs). Each builds in a git worktree of its own under
# $TMPDIR, never in this checkout; gpu-kit/variants/NAME.txt says what it was built from.
#
#   bash scripts/gpu-variants.sh base=0f6b631 hot=/path/to/hot-text.patch base2=0f6b631+/path/to/pause.patch
#
# Exit status: 0 when every variant was built, 1 when one was not (the others are kept), 2 on
# bad usage.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1
usage() {
	echo "usage: bash scripts/gpu-variants.sh NAME=COMMIT|NAME=PATCH|NAME=COMMIT+PATCH..." >&2
	exit 2
}
[ $# -gt 0 ] || usage
for arg in "$@"; do
	case $arg in
	[A-Za-z0-9]*=?*) ;;
	*) usage ;;
	esac
	case ${arg%%=*} in
	*[!A-Za-z0-9_-]* | kit) echo "gpu-variants: bad variant name '${arg%%=*}'" >&2 && exit 2 ;;
	esac
done
[ -f gpu-kit/libcumtrace.so ] || {
	echo "gpu-variants: no gpu-kit/libcumtrace.so: run scripts/gpu-pack.sh first" >&2
	exit 2
}
mkdir -p gpu-kit/variants
work=$(mktemp -d "${TMPDIR:-/tmp}/gpu-variants.XXXXXX")
trap 'git worktree prune; rm -rf "$work"' EXIT
rc=0
for arg in "$@"; do
	name=${arg%%=*} src=${arg#*=}
	tree=$work/$name
	if [ ! -f "$src" ] && [ "${src#*+}" != "$src" ] && [ -f "${src#*+}" ] &&
		git rev-parse -q --verify "${src%%+*}^{commit}" >/dev/null; then
		rev=${src%%+*} src=${src#*+}
		what="commit $(git rev-parse --short "$rev") with $(basename "$src")"
	elif [ -f "$src" ]; then
		rev=HEAD what="$(git rev-parse --short HEAD) with $(basename "$src")"
	elif git rev-parse -q --verify "$src^{commit}" >/dev/null; then
		rev=$src what="commit $(git rev-parse --short "$src")"
	else
		echo "gpu-variants: $name: '$src' is neither a file, a commit nor COMMIT+FILE" >&2
		rc=1
		continue
	fi
	git worktree add -q --detach "$tree" "$rev" || { rc=1 && continue; }
	if [ -f "$src" ] && ! git -C "$tree" apply "$(cd "$(dirname "$src")" && pwd)/$(basename "$src")"; then
		echo "gpu-variants: $name: $src does not apply to $rev" >&2
		rc=1
		continue
	fi
	if make -C "$tree" -j"$(nproc)" build/libcumtrace.so >"$work/$name.log" 2>&1; then
		cp "$tree/build/libcumtrace.so" "gpu-kit/variants/$name.so" &&
			echo "$what, built $(date -u +%FT%TZ)" >"gpu-kit/variants/$name.txt"
		echo "gpu-variants: gpu-kit/variants/$name.so ($what)"
	else
		tail -n 20 "$work/$name.log" >&2
		echo "gpu-variants: $name did not build" >&2
		rc=1
	fi
	git worktree remove --force "$tree"
done
exit $rc
