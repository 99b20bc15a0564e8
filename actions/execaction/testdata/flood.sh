#!/usr/bin/env bash
# Test command: floods stdout ($1 = stdout) or stderr ($1 = stderr, then exits 1).
set -euo pipefail
case $1 in
stdout)
	head -c $((5 * 1024 * 1024)) /dev/zero | tr '\0' 'x'
	;;
stderr)
	for i in $(seq 1 2000); do echo "progress line $i" >&2; done
	echo "LAST LINE" >&2
	exit 1
	;;
esac
