#!/usr/bin/env bash
# Test binary: records its arguments and environment in $RECORD_DIR, fails loudly when a
# previous run of the same working copy is still going, then runs the real binary ($TF_REAL).
set -uo pipefail
printf '%s\n' "$*" >>"$RECORD_DIR/args"
env >>"$RECORD_DIR/env"
guard="$RECORD_DIR/running-$(printf '%s' "$PWD" | cksum | cut -d' ' -f1)"
if ! mkdir "$guard" 2>/dev/null; then
	echo OVERLAP >>"$RECORD_DIR/overlap"
fi
"$TF_REAL" "$@"
rc=$?
rmdir "$guard" 2>/dev/null
exit $rc
