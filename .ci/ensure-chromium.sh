#!/usr/bin/env bash
# Makes sure Debian's Chromium is installed: the dashboard's browser test drives it headless.
# Installs the `chromium` package when running as root; otherwise prints the exact command.
set -euo pipefail

command -v chromium >/dev/null 2>&1 && exit 0
[[ -x /usr/bin/chromium ]] && exit 0

if [[ "$(id -u)" -ne 0 ]]; then
  echo "Chromium is missing (the dashboard's browser test needs it). Install it with:" >&2
  echo "  sudo apt-get update && sudo apt-get install -y chromium" >&2
  exit 1
fi
echo "Installing Chromium (apt-get install chromium)…" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
echo "Chromium installed." >&2
