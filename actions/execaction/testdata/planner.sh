#!/usr/bin/env bash
# Test command implementing plan: the "database" is the file $OUT_DIR/db holding the size
# last applied. reconcile writes it; plan compares the spec's size with it and writes nothing.
# A plan for size "never" exits 64 (cannot plan); one for size "slow" runs for a minute. A
# reconcile for size "held" runs until the file $OUT_DIR/release exists.
set -euo pipefail
stdin=$(cat)
size=$(printf '%s' "$stdin" | sed -n 's/.*"size":"\([^"]*\)".*/\1/p')
db="$OUT_DIR/db"
case "$TRUEUP_OPERATION" in
reconcile)
	if [[ $size == held ]]; then
		: >"$OUT_DIR/reconcile-started"
		while [[ ! -f $OUT_DIR/release ]]; do sleep 0.02; done
	fi
	printf '%s' "$size" >"$db"
	printf '{"done": true, "outputs": {"size": "%s"}}' "$size"
	;;
plan)
	echo "planning size $size" >&2
	if [[ $size == slow ]]; then
		: >"$OUT_DIR/plan-started"
		sleep 60
	fi
	if [[ $size == never ]]; then
		echo "this backend cannot plan" >&2
		exit 64
	fi
	if [[ ! -f $db ]]; then
		printf '{"changes": true, "summary": "1 to add, 0 to change", "plan": "+ database (size %s)"}' "$size"
	elif [[ $(cat "$db") != "$size" ]]; then
		printf '{"changes": true, "summary": "0 to add, 1 to change", "plan": "~ database size %s -> %s"}' "$(cat "$db")" "$size"
	else
		printf '{"changes": false, "summary": "no changes", "plan": ""}'
	fi
	;;
*) ;;
esac
