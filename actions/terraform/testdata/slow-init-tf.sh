#!/usr/bin/env bash
# Test binary: an init run while $SLOW_INIT exists announces itself in $INIT_STARTED and runs
# until interrupted, or for a minute; everything else is the real binary ($TF_REAL).
set -uo pipefail
if [[ "${1:-}" == init && -e "$SLOW_INIT" ]]; then
	trap 'exit 130' INT TERM
	: >"$INIT_STARTED"
	sleep 60 >/dev/null 2>&1 &
	wait $!
	exit 0
fi
exec "$TF_REAL" "$@"
