#!/usr/bin/env bash
# Test command: replies and exits, leaving a child that holds stdout open; writes the child's
# pid to $PID_FILE.
sleep 1000 &
echo $! >"$PID_FILE"
echo '{"message": "left a child behind"}'
