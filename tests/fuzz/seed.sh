#!/bin/sh
# Fuzz inputs of tests/fuzz/fuzz_dump.c: a 4-byte selector (command, format,
# options; see the harness) followed by a dump. An input that starts with the
# dump's magic "CUMTRACE" is a bare dump (selector 0).
#   seed.sh make SELECTOR DUMP OUT     OUT = SELECTOR (8 hex digits) + DUMP
#   seed.sh dump INPUT OUT             OUT = the dump part of INPUT
#   seed.sh expand DIR OUTDIR          every input of DIR once per command byte
#                                      0..15 (the rest of its selector kept)
set -eu
SEL=4

# is_bare FILE: FILE starts with the dump's magic
is_bare() {
	[ "$(head -c 8 "$1" | tr -d '\000')" = CUMTRACE ]
}

# put_bytes HEX: write the bytes of HEX (pairs of hex digits) to stdout
put_bytes() {
	h=$1
	while [ -n "$h" ]; do
		rest=${h#??}
		# shellcheck disable=SC2059
		printf "\\$(printf %03o "0x${h%"$rest"}")"
		h=$rest
	done
}

case ${1:-} in
make)
	[ $# -eq 4 ] || { echo "usage: seed.sh make SELECTOR DUMP OUT" >&2; exit 2; }
	case $2 in [0-9a-fA-F][0-9a-fA-F][0-9a-fA-F][0-9a-fA-F][0-9a-fA-F][0-9a-fA-F][0-9a-fA-F][0-9a-fA-F]) ;;
	*) echo "seed.sh: selector '$2': want 8 hex digits" >&2; exit 2 ;;
	esac
	{ put_bytes "$2"; cat "$3"; } >"$4"
	;;
dump)
	[ $# -eq 3 ] || { echo "usage: seed.sh dump INPUT OUT" >&2; exit 2; }
	if is_bare "$2"; then
		cat "$2" >"$3"
	else
		tail -c +$((SEL + 1)) "$2" >"$3"
	fi
	;;
expand)
	[ $# -eq 3 ] || { echo "usage: seed.sh expand DIR OUTDIR" >&2; exit 2; }
	mkdir -p "$3"
	for f in "$2"/*; do
		[ -f "$f" ] || continue
		case $f in *.md) continue ;; esac
		base=$(basename "$f")
		c=0
		while [ $c -lt 16 ]; do
			if is_bare "$f"; then
				{ put_bytes "$(printf %02x $c)000000"; cat "$f"; } >"$3/$base.$c"
			else
				{ put_bytes "$(printf %02x $c)"; tail -c +2 "$f"; } >"$3/$base.$c"
			fi
			c=$((c + 1))
		done
	done
	;;
*)
	echo "usage: seed.sh make SELECTOR DUMP OUT | dump INPUT OUT | expand DIR OUTDIR" >&2
	exit 2
	;;
esac
