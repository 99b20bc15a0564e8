#!/usr/bin/env bash
# Makes sure PostgreSQL server binaries (initdb, postgres) are installed: trueup's private
# cluster for `make run` and `make test` starts them. Installs Debian's `postgresql` package
# when running as root; otherwise prints the exact command.
set -euo pipefail

have_server() {
  local d
  if command -v pg_config >/dev/null 2>&1; then
    d="$(pg_config --bindir 2>/dev/null || true)"
    [[ -x "$d/initdb" && -x "$d/postgres" ]] && return 0
  fi
  for d in /usr/lib/postgresql/*/bin; do
    [[ -x "$d/initdb" && -x "$d/postgres" ]] && return 0
  done
  return 1
}

[[ -n "${TRUEUP_TEST_DATABASE_URL:-}" ]] && exit 0
have_server && exit 0

if [[ "$(id -u)" -ne 0 ]]; then
  echo "PostgreSQL server binaries are missing. Install them with:" >&2
  echo "  sudo apt-get update && sudo apt-get install -y postgresql" >&2
  exit 1
fi
echo "Installing PostgreSQL server binaries (apt-get install postgresql)…" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends postgresql >/dev/null
# Debian's package starts its own cluster; trueup runs private ones and does not need it.
if command -v pg_ctlcluster >/dev/null 2>&1; then
  for v in /etc/postgresql/*/main; do
    [[ -d "$v" ]] || continue
    ver="$(basename "$(dirname "$v")")"
    pg_ctlcluster "$ver" main stop >/dev/null 2>&1 || true
  done
fi
have_server || { echo "postgresql installed but initdb/postgres not found" >&2; exit 1; }
echo "PostgreSQL server binaries installed." >&2
