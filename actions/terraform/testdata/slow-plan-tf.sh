#!/usr/bin/env bash
# Test binary: a preview's plan (plan … -lock=false) announces itself in $PLAN_STARTED and
# runs until interrupted, or for a minute; everything else is the real binary ($TF_REAL).
set -uo pipefail
if [[ "${1:-}" == plan && " $* " == *" -lock=false "* ]]; then
	trap 'exit 130' INT TERM
	: >"$PLAN_STARTED"
	sleep 60 >/dev/null 2>&1 &
	wait $!
	exit 0
fi
exec "$TF_REAL" "$@"
