#!/usr/bin/env bash
# Test command: like slow.sh, but it and its child ignore SIGTERM, so only SIGKILL stops them.
trap '' TERM
sleep 1000 &
if [[ -n ${PID_FILE:-} ]]; then echo $! >"$PID_FILE"; fi
wait
