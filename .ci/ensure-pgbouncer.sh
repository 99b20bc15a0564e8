#!/usr/bin/env bash
# Makes sure PgBouncer is installed: the tests of trueup behind a transaction-pooling PgBouncer
# (pgtest.PgBouncer) start it in front of their private cluster. Installs Debian's `pgbouncer`
# package when running as root; otherwise prints the exact command.
set -euo pipefail

have_pgbouncer() {
  command -v pgbouncer >/dev/null 2>&1 || [[ -x /usr/sbin/pgbouncer ]]
}

have_pgbouncer && exit 0

if [[ "$(id -u)" -ne 0 ]]; then
  echo "PgBouncer is missing (the tests behind a pooler need it). Install it with:" >&2
  echo "  sudo apt-get update && sudo apt-get install -y pgbouncer" >&2
  exit 1
fi
echo "Installing PgBouncer (apt-get install pgbouncer)…" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends pgbouncer >/dev/null
# Debian's package may start its own service; the tests run private ones and do not need it.
if command -v systemctl >/dev/null 2>&1; then
  systemctl stop pgbouncer >/dev/null 2>&1 || true
fi
if [[ -x /etc/init.d/pgbouncer ]]; then
  /etc/init.d/pgbouncer stop >/dev/null 2>&1 || true
fi
have_pgbouncer || { echo "pgbouncer installed but not found" >&2; exit 1; }
echo "PgBouncer installed." >&2
