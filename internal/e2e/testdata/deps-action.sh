#!/usr/bin/env bash
# Test action for dependencies: logs every call to $CALL_LOG like action.sh, keeps each
# call's stdin in stdin/ beside the log, and answers outputs derived from the spec it got:
# endpoint is "<name>-<hash of the spec>", so a resolved spec that changes changes it.
set -euo pipefail
req="$(cat)"
id="$TRUEUP_NAMESPACE/$TRUEUP_KIND/$TRUEUP_NAME"
start="$(date +%s%N)"
dir="$(dirname "$CALL_LOG")/stdin"
mkdir -p "$dir"
printf '%s' "$req" > "$dir/$TRUEUP_KIND.$TRUEUP_NAME.$TRUEUP_OPERATION.$start.json"
[[ -n "${SLEEP:-}" ]] && sleep "$SLEEP"
spec="$(printf '%s' "$req" | sed -n 's/.*"spec":\(.*\),"labels".*/\1/p')"
hash="$(printf '%s' "$spec" | sha256sum | cut -c1-12)"
end="$(date +%s%N)"
echo "call $id $start $end $TRUEUP_OPERATION $TRUEUP_GENERATION $$" >> "$CALL_LOG"
printf '{"done": true, "outputs": {"endpoint": "%s-%s", "port": 5432}, "message": "ok"}\n' "$TRUEUP_NAME" "$hash"
