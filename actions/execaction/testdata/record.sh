#!/usr/bin/env bash
# Test command: records what it was given, then replies as its environment says. Its
# arguments are printed on stderr, one a line (not from the environment: config env values
# of secret-looking names are redacted from stderr).
#   OUT_DIR     if set: stdin goes to $OUT_DIR/stdin.json, the environment to env.txt and
#               the working directory to pwd.txt
#   REPLY_JSON  printed on stdout
#   EXIT        exit status (default 0)
set -euo pipefail
stdin=$(cat)
if [[ -n ${OUT_DIR:-} ]]; then
	printf '%s' "$stdin" >"$OUT_DIR/stdin.json"
	env >"$OUT_DIR/env.txt"
	pwd >"$OUT_DIR/pwd.txt"
fi
printf '%s' "${REPLY_JSON:-}"
if (($#)); then printf '%s\n' "$@" >&2; fi
exit "${EXIT:-0}"
