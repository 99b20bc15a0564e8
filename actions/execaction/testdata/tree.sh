#!/usr/bin/env bash
# Test command: starts a child (sleeper.sh, in its process group) and a double-forked,
# setsid'd daemon (sleeper.sh in a session of its own, output detached), both sleeping 30 s;
# their host pids go to $PID_DIR/child and $PID_DIR/daemon. Then it writes $PID_DIR/ready and
# waits for its child, or with MODE=exit replies and exits at once.
set -euo pipefail
cat >/dev/null
sleeper="$(dirname "$0")/sleeper.sh"
"$sleeper" "$PID_DIR/child" 30 &
setsid sh -c '"$0" "$1" 30 </dev/null >/dev/null 2>&1 &' "$sleeper" "$PID_DIR/daemon"
while [[ ! -e $PID_DIR/child || ! -e $PID_DIR/daemon ]]; do sleep 0.01; done
touch "$PID_DIR/ready"
if [[ ${MODE:-wait} == exit ]]; then
	echo '{"message": "left a daemon"}'
	exit 0
fi
wait
