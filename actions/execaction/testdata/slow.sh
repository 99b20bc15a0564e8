#!/usr/bin/env bash
# Test command: blocks on a child process until killed; writes the child's pid to $PID_FILE.
sleep 1000 &
if [[ -n ${PID_FILE:-} ]]; then echo $! >"$PID_FILE"; fi
wait
