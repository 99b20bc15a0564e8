#!/usr/bin/env bash
# Prints the --data-dir flag `make run` passes to `trueup serve`, or nothing to keep the
# example config's dataDir (.trueup in the clone).
#
# As root, trueup runs its private PostgreSQL as the user postgres (or nobody), which must be
# able to traverse every folder down to the data folder; trueup widens the permissions of no
# folder it did not create, and refuses instead. From a clone that user cannot reach (under
# /root, say, which is 0700), `make run` therefore keeps its data in /var/lib/trueup/make-run,
# a folder trueup creates itself. DATA_DIR chooses the folder outright. Another target names
# itself and its own fallback folder with RUN_NAME and FALLBACK_DIR (make example-terraform).
set -euo pipefail

if [[ -n "${DATA_DIR:-}" ]]; then
  echo "--data-dir ${DATA_DIR}"
  exit 0
fi
[[ "$(id -u)" == 0 ]] || exit 0

account=""
for u in postgres nobody; do
  if id -u "$u" >/dev/null 2>&1 && [[ "$(id -u "$u")" != 0 ]]; then
    account="$u"
    break
  fi
done
[[ -n "$account" ]] || exit 0 # trueup says what to do

target="$PWD"
[[ -d "$PWD/.trueup" ]] && target="$PWD/.trueup"
if ! runuser -u "$account" -- test -x "$target" 2>/dev/null; then
  fallback="${FALLBACK_DIR:-/var/lib/trueup/make-run}"
  echo "${RUN_NAME:-make run}: user $account cannot reach $target, and trueup widens no folder it did not create:" \
    "keeping the private PostgreSQL in $fallback (set DATA_DIR to choose another)" >&2
  echo "--data-dir $fallback"
fi
