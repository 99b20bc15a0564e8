#!/usr/bin/env bash
# Chooses the data folder of `make run` and `make example-terraform`.
#
#   run-data-dir.sh                  prints the --data-dir flag `make run` passes to `trueup
#                                    serve`, or nothing to keep the config's dataDir
#   run-data-dir.sh COMMAND ARGS...  runs COMMAND ARGS, with --data-dir DIR added when needed
#                                    (a DIR with spaces stays one argument)
#
# As root, trueup runs its private PostgreSQL as the user postgres (or nobody), which must be
# able to traverse every folder down to the data folder; trueup widens the permissions of no
# folder it did not create, and refuses instead. TARGET_DIR is the folder the config's dataDir
# is in (.trueup unless set, relative to the current folder): when that user cannot reach it,
# or the deepest part of it that exists (a clone under /root, say, which is 0700), the data go
# to FALLBACK_DIR (/var/lib/trueup/make-run unless set), a folder trueup creates itself.
# DATA_DIR chooses the folder outright. RUN_NAME names the target in messages; with a COMMAND,
# DEFAULT_DIR (the config's dataDir) lets it say where the data are in every case.
set -euo pipefail

dir="${DATA_DIR:-}"
if [[ -z "$dir" && "$(id -u)" == 0 ]]; then
  account=""
  for u in postgres nobody; do
    if id -u "$u" >/dev/null 2>&1 && [[ "$(id -u "$u")" != 0 ]]; then
      account="$u"
      break
    fi
  done
  if [[ -n "$account" ]]; then # else trueup says what to do
    target="$PWD/${TARGET_DIR:-.trueup}"
    while [[ ! -d "$target" && "$target" != "$PWD" ]]; do
      target="$(dirname "$target")"
    done
    if ! runuser -u "$account" -- test -x "$target" 2>/dev/null; then
      dir="${FALLBACK_DIR:-/var/lib/trueup/make-run}"
      echo "${RUN_NAME:-make run}: user $account cannot reach $target, and trueup widens no folder it did not create:" \
        "keeping the private PostgreSQL in $dir (set DATA_DIR to choose another)" >&2
    fi
  fi
fi

if [[ $# == 0 ]]; then
  [[ -z "$dir" ]] || echo "--data-dir $dir"
  exit 0
fi
if [[ -n "${RUN_NAME:-}" && -n "${DEFAULT_DIR:-}" ]]; then
  echo "$RUN_NAME: data (database, Git cache) in ${dir:-$PWD/$DEFAULT_DIR}" >&2
fi
if [[ -n "$dir" ]]; then
  exec "$@" --data-dir "$dir"
fi
exec "$@"
