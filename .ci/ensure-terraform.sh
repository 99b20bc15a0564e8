#!/usr/bin/env bash
# Makes sure a Terraform or OpenTofu binary is on PATH: the terraform action's tests run the
# real one (built-in resources only, nothing downloaded by the tests). Neither is packaged by
# Debian, and the npm packages that wrap them download a release binary when they run, which
# this project never does; so a missing binary is an error with what to do, not an install.
set -euo pipefail

for bin in terraform tofu; do
  if command -v "$bin" >/dev/null 2>&1; then
    echo "$bin: $(command -v "$bin") ($("$bin" version 2>/dev/null | head -1))" >&2
    exit 0
  fi
done
# Debian may package OpenTofu one day: use it when the archive has it.
if [[ "$(id -u)" -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null 2>&1 || true
  for pkg in opentofu tofu; do
    if apt-cache show "$pkg" >/dev/null 2>&1; then
      echo "Installing $pkg (apt-get install $pkg)…" >&2
      apt-get install -y -qq --no-install-recommends "$pkg" >/dev/null
      command -v tofu >/dev/null 2>&1 && exit 0
    fi
  done
fi
cat >&2 <<'MSG'
Neither terraform nor tofu is on PATH, and no package of this machine's archive provides one.
The terraform action's tests (./actions/terraform) need the real binary and fail without it.
Install Terraform (>= 1.4) or OpenTofu from your distribution or vendor's package repository,
put it on PATH, and run again.
MSG
exit 1
