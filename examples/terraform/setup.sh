#!/usr/bin/env bash
# Creates the Git repository of the Terraform example (docs/getting-started.md):
#
#   DIR/infra.git   a bare repository, standing in for one hosted on a forge; trueup reads it
#   DIR/work        a clone of it, where you edit, commit and push
#
# and pushes the content of examples/terraform/repo/ to its branch main as the first commit.
# DIR is .trueup/example-terraform in the clone unless given. A repository already there is
# kept as it is (remove DIR to start over).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dir="${1:-$here/../../.trueup/example-terraform}"
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
bare="$dir/infra.git"
work="$dir/work"

if [[ -d "$bare" ]]; then
  echo "$bare exists: kept as it is (remove $dir to start over)" >&2
else
  git init -q --bare --initial-branch=main "$bare"
  # Lets trueup fetch one commit by its id, as GitHub and GitLab do: the module at the commit
  # a resource was applied from, without the branch's whole history.
  git -C "$bare" config uploadpack.allowReachableSHA1InWant true
  rm -rf "$work"
  git clone -q "$bare" "$work" 2>/dev/null
  git -C "$work" checkout -q -b main
  # Commits need an author: the clone gets one of its own when git has none configured.
  if [[ -z "$(git -C "$work" config user.email || true)" ]]; then
    git -C "$work" config user.name "trueup example"
    git -C "$work" config user.email "example@trueup.invalid"
  fi
  cp -R "$here/repo/." "$work/"
  git -C "$work" add -A
  git -C "$work" commit -q -m "Two buckets, applied by the Terraform module modules/bucket"
  git -C "$work" push -q origin main
  echo "created $bare with one commit ($(git -C "$work" rev-parse --short HEAD)), cloned in $work" >&2
fi

cat >&2 <<EOF

Next, once trueup serve runs (make example-terraform starts it after this script):
  bin/trueup get resources                 # both Buckets become Ready within seconds
  bin/trueup describe Bucket/assets        # its outputs, and the spec its action received
  open http://127.0.0.1:8080               # the dashboard
Change something: edit a file in $work, then
  git -C $work commit -am "…" && git -C $work push
docs/getting-started.md walks through it.
EOF
