#!/usr/bin/env bash
# Creates the Git repository of the Terraform example (docs/getting-started.md):
#
#   DIR/infra.git   a bare repository, standing in for one hosted on a forge; trueup reads it
#   DIR/work        a repository whose origin is DIR/infra.git, where you edit, commit and push
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
  git init -q --initial-branch=main "$work"
  git -C "$work" remote add origin "$bare"
  # Commits need an author: the repository gets one of its own when git has none configured.
  if [[ -z "$(git -C "$work" config user.email || true)" ]]; then
    git -C "$work" config user.name "trueup example"
    git -C "$work" config user.email "example@trueup.invalid"
  fi
  cp -R "$here/repo/." "$work/"
  git -C "$work" add -A
  git -C "$work" commit -q -m "Two buckets, applied by the Terraform module modules/bucket"
  git -C "$work" push -q -u origin main
  echo "created $bare with one commit ($(git -C "$work" rev-parse --short HEAD)), pushed from $work" >&2
fi

cat >&2 <<EOF

Next, in a second terminal, from the folder make example-terraform runs in
(docs/getting-started.md walks through it):
  export PATH="\$PWD/bin:\$PATH"
  cd $work
  trueup get resources            # both Buckets become Ready within seconds
  trueup describe Bucket/assets   # its outputs, and what it depends on
and open http://127.0.0.1:8080 (the dashboard). Edit a manifest, then
  git commit -am "…" && git push && trueup sync infra --wait
EOF
