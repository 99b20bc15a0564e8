#!/usr/bin/env bash
# Test command: like slow.sh, but it and its child ignore SIGTERM, so only SIGKILL stops them.
trap '' TERM
sleep 1000 &
# $! numbers the child in the PID namespace of the command; /proc is the host's and has its
# host pid (read fails at the end of that file, which has no newline: hence || :).
if [[ -n ${PID_FILE:-} ]]; then { read -r pid _ || :; } </proc/thread-self/children; echo "$pid" >"$PID_FILE.tmp" && mv "$PID_FILE.tmp" "$PID_FILE"; fi
wait
