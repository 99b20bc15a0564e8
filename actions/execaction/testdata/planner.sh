#!/usr/bin/env bash
# Test command implementing plan: the "database" is the file $OUT_DIR/db holding the size
# last applied. reconcile writes it; plan compares the spec's size with it and writes nothing.
# A plan for size "never" exits 64 (cannot plan); one for size "slow" runs for a minute; one
# for size "brief" runs until a reconcile has started or for a second. A reconcile for size
# "held" runs until the file $OUT_DIR/release exists. Every call appends "OPERATION start"
# and "OPERATION end" (also when terminated) to $OUT_DIR/seq, the order the calls ran in.
# A plan reports counts and a hash; with keepPlan it keeps its hash in $OUT_DIR/kept-plan,
# and a reconcile with an approvedPlan applies only when that is the kept plan's hash. The
# hash names the change by its kind and the resource's generation, never by the spec's
# values (a test takes one of them for a secret): the same change gives the same hash.
set -euo pipefail
stdin=$(cat)
size=$(printf '%s' "$stdin" | sed -n 's/.*"size":"\([^"]*\)".*/\1/p')
# keepPlan and approvedPlan are the request's last two top-level fields (the protocol
# writes them after state, in compact JSON): read at the end of the document, they are never
# a field of the same name inside the spec, with or state.
tail_re='"keepPlan":\(true\|false\),"approvedPlan":"\([^"\\]*\)"}$'
keep=$(printf '%s' "$stdin" | sed -n "s/.*,${tail_re}/\\1/p")
approved=$(printf '%s' "$stdin" | sed -n "s/.*,${tail_re}/\\2/p")
db="$OUT_DIR/db"
mark() { echo "$TRUEUP_OPERATION $1" >>"$OUT_DIR/seq"; }
mark start
trap 'mark end; exit 143' TERM
case "$TRUEUP_OPERATION" in
reconcile)
	if [[ $size == held ]]; then
		: >"$OUT_DIR/reconcile-started"
		while [[ ! -f $OUT_DIR/release ]]; do sleep 0.02; done
	fi
	if [[ -n $approved ]]; then
		if [[ ! -f $OUT_DIR/kept-plan || $(cat "$OUT_DIR/kept-plan") != "$approved" ]]; then
			echo "no kept plan of hash $approved" >&2
			mark end
			exit 1
		fi
		rm "$OUT_DIR/kept-plan"
	fi
	printf '%s' "$size" >"$db"
	printf '{"done": true, "outputs": {"size": "%s"}}' "$size"
	;;
plan)
	echo "planning size $size" >&2
	if [[ $size == slow ]]; then
		: >"$OUT_DIR/plan-started"
		sleep 60 & # waited for with wait, which a TERM interrupts: the trap then runs at once
		wait $!
	fi
	if [[ $size == brief ]]; then
		: >"$OUT_DIR/plan-started"
		for ((i = 0; i < 50; i++)); do
			grep -q '^reconcile start' "$OUT_DIR/seq" && break
			sleep 0.02
		done
	fi
	if [[ $size == never ]]; then
		echo "this backend cannot plan" >&2
		mark end
		exit 64
	fi
	if [[ ! -f $db ]]; then
		hash="create-g$TRUEUP_GENERATION"
		printf '{"changes": true, "summary": "1 to add, 0 to change", "plan": "+ database (size %s)", "add": 1, "change": 0, "hash": "%s"}' "$size" "$hash"
	elif [[ $(cat "$db") != "$size" ]]; then
		hash="resize-g$TRUEUP_GENERATION"
		printf '{"changes": true, "summary": "0 to add, 1 to change", "plan": "~ database size %s -> %s", "add": 0, "change": 1, "hash": "%s"}' "$(cat "$db")" "$size" "$hash"
	else
		hash="none-g$TRUEUP_GENERATION"
		printf '{"changes": false, "summary": "no changes", "plan": "", "add": 0, "change": 0, "hash": "%s"}' "$hash"
	fi
	if [[ $keep == true ]]; then printf '%s' "$hash" >"$OUT_DIR/kept-plan"; fi
	;;
*) ;;
esac
mark end
