#!/usr/bin/env bash
# Test action for long-running work: the first call "starts" it and keeps the start time in
# state; later calls report done once $DURATION seconds have passed.
set -euo pipefail
req="$(cat)"
now="$(date +%s)"
started="$(printf '%s' "$req" | sed -n 's/.*"state":{"started":\([0-9]*\)}.*/\1/p')"
if [[ -z "$started" ]]; then
  printf '{"done": false, "state": {"started": %s}, "requeueAfter": "5s", "message": "started"}\n' "$now"
elif (( now - started >= DURATION )); then
  printf '{"done": true, "outputs": {"took": %s}, "message": "finished"}\n' "$((now - started))"
else
  printf '{"done": false, "state": {"started": %s}, "requeueAfter": "5s", "message": "running for %ss"}\n' "$started" "$((now - started))"
fi
