#!/usr/bin/env bash
# Test command written before plan existed: it treats every operation but delete and
# observe as reconcile, and records each reconcile in $OUT_DIR/applied.
set -euo pipefail
cat >/dev/null
case "$TRUEUP_OPERATION" in
delete | observe) ;;
*)
	echo "$TRUEUP_OPERATION" >>"$OUT_DIR/applied"
	printf '{"done": true}'
	;;
esac
