#!/usr/bin/env bash
# Test action for exec_tree_test.go: works the way wrapper scripts around Terraform do, in a
# child and in a double-forked, setsid'd daemon, each sleeping $SLEEP seconds; every line it
# appends to $CALL_LOG holds a host pid ($$ is the PID namespace's) and a time in unix ns:
#   run-start PID NS        the script started
#   worker PID NS NAME      a worker started (NAME child or daemon)
#   run-end PID NS          the script's work is done (absent when it was killed)
set -euo pipefail
cat >/dev/null
read -r self _ </proc/self/stat
echo "run-start $self $(date +%s%N)" >>"$CALL_LOG"
worker='read -r p _ </proc/self/stat; echo "worker $p $(date +%s%N) $0" >>"$CALL_LOG"; exec sleep "$1"'
sh -c "$worker" child "$SLEEP" &
setsid sh -c 'sh -c "$0" daemon "$1" </dev/null >/dev/null 2>&1 &' "$worker" "$SLEEP"
wait # for the child; the daemon is nobody's to wait for
echo "run-end $self $(date +%s%N)" >>"$CALL_LOG"
echo '{"done": true, "message": "ok"}'
