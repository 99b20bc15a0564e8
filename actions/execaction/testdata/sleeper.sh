#!/bin/sh
# Test helper: writes its host pid to $1 (atomically), then becomes `sleep $2`, keeping every
# descriptor it inherited (the resource lock among them).
read -r pid _ </proc/self/stat
echo "$pid" >"$1.tmp" && mv "$1.tmp" "$1"
exec sleep "$2"
