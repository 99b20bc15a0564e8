#!/usr/bin/env bash
# Makes sure a C compiler is installed: `make test` runs with -race, which needs cgo, and cgo
# needs one (Go's default is `cc`, or $CC). Installs Debian's `gcc` package when running as
# root; otherwise prints the exact command.
set -euo pipefail

have_cc() {
  local cc
  cc="$("${GO:-go}" env CC 2>/dev/null || true)"
  cc="${cc%% *}" # CC may carry flags
  command -v "${cc:-cc}" >/dev/null 2>&1
}

have_cc && exit 0

if [[ "$(id -u)" -ne 0 ]]; then
  echo "A C compiler is missing (go test -race needs cgo). Install one with:" >&2
  echo "  sudo apt-get update && sudo apt-get install -y gcc" >&2
  exit 1
fi
echo "Installing a C compiler (apt-get install gcc)…" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends gcc libc6-dev >/dev/null
have_cc || { echo "gcc installed, but Go's C compiler ($("${GO:-go}" env CC 2>/dev/null || echo cc)) is not found" >&2; exit 1; }
echo "C compiler installed." >&2
