#!/usr/bin/env bash
# Test action: logs every call with start/end times to $CALL_LOG, fails while $FAIL_FLAG
# exists, sleeps $SLEEP seconds, and returns outputs derived from the resource.
set -euo pipefail
req="$(cat)"
id="$TRUEUP_NAMESPACE/$TRUEUP_KIND/$TRUEUP_NAME"
if [[ "$TRUEUP_OPERATION" == plan ]]; then
  # A plan changes nothing and is not a call of the log.
  size="$(printf '%s' "$req" | sed -n 's/.*"size":\([0-9]*\).*/\1/p')"
  printf '{"changes": true, "summary": "1 to change (size %s)", "plan": "Plan output for %s: size -> %s"}\n' "${size:-?}" "$TRUEUP_NAME" "${size:-?}"
  exit 0
fi
start="$(date +%s%N)"
if [[ -n "${FAIL_FLAG:-}" && -e "$FAIL_FLAG" ]]; then
  echo "start $id $start $TRUEUP_OPERATION $TRUEUP_GENERATION fail" >> "$CALL_LOG"
  echo "provider said: quota exceeded for $TRUEUP_NAME" >&2
  exit "${FAIL_EXIT:-3}"
fi
[[ -n "${SLEEP:-}" ]] && sleep "$SLEEP"
end="$(date +%s%N)"
echo "call $id $start $end $TRUEUP_OPERATION $TRUEUP_GENERATION $$" >> "$CALL_LOG"
size="$(printf '%s' "$req" | sed -n 's/.*"size":\([0-9]*\).*/\1/p')"
printf '{"done": true, "outputs": {"address": "%s.%s.internal", "size": %s, "generation": %s}, "message": "ok"}\n' \
  "$TRUEUP_NAME" "$TRUEUP_NAMESPACE" "${size:-0}" "$TRUEUP_GENERATION"
