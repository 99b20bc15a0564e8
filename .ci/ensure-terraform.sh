#!/usr/bin/env bash
# Makes sure a Terraform or OpenTofu binary is on PATH: the terraform action's tests run the
# real one (built-in resources only, nothing downloaded by the tests). Neither is packaged by
# Debian, and the npm packages that wrap them download a release binary when they run, which
# this project never does. So, in order: a binary already on PATH (or in Go's bin folder);
# Debian's package if the archive ever has one; else OpenTofu BUILT FROM SOURCE fetched
# through the Go module proxy (the one registry this machine reaches that carries it): about
# 3-5 minutes on 2 cores, once; the binary goes to /usr/local/bin when writable, else to
# $(go env GOPATH)/bin, which `make test` puts on PATH.
set -euo pipefail

TOFU_VERSION="${TOFU_VERSION:-v1.10.10}"
GO="${GO:-go}"
gobin="$("$GO" env GOPATH 2>/dev/null)/bin"
export PATH="$PATH:$gobin"

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
# Build OpenTofu from its module source (go install refuses it: its go.mod has replace
# directives, which only apply when it is the main module, so build it as one).
if command -v "$GO" >/dev/null 2>&1; then
  dest=/usr/local/bin
  [[ -w "$dest" ]] || dest="$gobin"
  mkdir -p "$dest"
  echo "No terraform or tofu on PATH: building OpenTofu $TOFU_VERSION from the Go module proxy into $dest (a few minutes, once)…" >&2
  src="$("$GO" mod download -json "github.com/opentofu/opentofu@$TOFU_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')"
  if [[ -n "$src" && -d "$src" ]]; then
    work="$(mktemp -d)"
    trap 'rm -rf "$work"' EXIT
    cp -r "$src/." "$work/"
    chmod -R u+w "$work"
    if (cd "$work" && GOFLAGS= "$GO" build -trimpath -o "$dest/tofu.tmp" ./cmd/tofu); then
      mv "$dest/tofu.tmp" "$dest/tofu"
      echo "tofu: $dest/tofu ($("$dest/tofu" version 2>/dev/null | head -1))" >&2
      exit 0
    fi
  fi
fi
cat >&2 <<'MSG'
Neither terraform nor tofu is on PATH, no package of this machine's archive provides one, and
OpenTofu could not be built from the Go module proxy. The terraform action's tests
(./actions/terraform) need the real binary and fail without it. Install Terraform (>= 1.4) or
OpenTofu from your distribution or vendor's package repository, put it on PATH, and run again.
MSG
exit 1
