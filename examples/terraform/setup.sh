#!/usr/bin/env bash
# Creates the Git repository of the Terraform example (docs/getting-started.md):
#
#   DIR/infra.git   a bare repository, standing in for one hosted on a forge; trueup reads it
#   DIR/work        a repository whose origin is DIR/infra.git, where you edit, commit and push
#
# and pushes the content of examples/terraform/repo/ to its branch main as the first commit.
# DIR is .trueup/example-terraform in the clone unless given. A repository already there is
# kept as it is. Both are built in a temporary folder inside DIR and moved into place once the
# push succeeded, so a failed run leaves nothing half made. setup.sh never removes a work
# clone: your edits and commits in it are yours.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dir="${1:-$here/../../.trueup/example-terraform}"
# Folders made here are 0755 whatever the umask: as root, the private PostgreSQL's user must
# be able to reach the data folder trueup makes inside DIR.
(umask 022 && mkdir -p "$dir")
dir="$(cd "$dir" && pwd)"
bare="$dir/infra.git"
work="$dir/work"
start_over="remove $dir to start over, and the data folder too when make example-terraform keeps it elsewhere (it says so as it starts)"

if git -C "$bare" rev-parse --verify -q refs/heads/main >/dev/null 2>&1; then
  echo "$bare exists: kept as it is; $start_over" >&2
elif [[ -e "$work" ]]; then
  echo "setup.sh: $work exists, but $bare holds no branch main. setup.sh never removes a work clone:" \
    "move $work away if it holds work to keep, then $start_over" >&2
  exit 1
elif [[ -e "$bare" ]]; then
  echo "setup.sh: $bare exists but holds no branch main: remove it and run setup.sh again" >&2
  exit 1
else
  tmp="$(mktemp -d "$dir/.setup.XXXXXX")"
  trap 'rm -rf "$tmp"' EXIT
  git init -q --bare --initial-branch=main "$tmp/infra.git"
  # Lets trueup fetch one commit by its id, as GitHub and GitLab do: the module at the commit
  # a resource was applied from, without the branch's whole history.
  git -C "$tmp/infra.git" config uploadpack.allowReachableSHA1InWant true
  git init -q --initial-branch=main "$tmp/work"
  git -C "$tmp/work" remote add origin "$tmp/infra.git"
  # Commits need an author: the repository gets one of its own when git has none configured.
  if [[ -z "$(git -C "$tmp/work" config user.email || true)" ]]; then
    git -C "$tmp/work" config user.name "trueup example"
    git -C "$tmp/work" config user.email "example@trueup.invalid"
  fi
  cp -R "$here/repo/." "$tmp/work/"
  git -C "$tmp/work" add -A
  # Unsigned: a signing setup of your own (commit.gpgsign) has no say in the example.
  git -C "$tmp/work" -c commit.gpgsign=false commit -q -m "Two buckets, applied by the Terraform module modules/bucket"
  git -C "$tmp/work" push -q -u origin main
  mv "$tmp/infra.git" "$bare"
  mv "$tmp/work" "$work"
  git -C "$work" remote set-url origin "$bare"
  echo "created $bare with one commit ($(git -C "$work" rev-parse --short HEAD)), pushed from $work" >&2
fi

cat >&2 <<EOT

Next, in a second terminal, from the folder make example-terraform runs in
(docs/getting-started.md walks through it):
  export PATH="\$PWD/bin:\$PATH"
  cd "$work"
  trueup get resources            # both Buckets become Ready within seconds
  trueup describe Bucket/assets   # its outputs, and what it depends on
and open http://127.0.0.1:8080 (the dashboard). Edit a manifest, then
  git commit -am "…" && git push && trueup sync infra --wait
EOT
