#!/usr/bin/env bash
# Test command: replies and exits, leaving a child that holds stdout open; writes the child's
# pid to $PID_FILE.
sleep 1000 &
# $! numbers the child in the PID namespace of the command; /proc is the host's and has its
# host pid (read fails at the end of that file, which has no newline: hence || :).
{ read -r pid _ || :; } </proc/thread-self/children; echo "$pid" >"$PID_FILE.tmp" && mv "$PID_FILE.tmp" "$PID_FILE"
echo '{"message": "left a child behind"}'
