#!/bin/sh
# pkg-version.sh VERSION EPOCH: the Debian package version for a `git describe` VERSION.
# A Debian version must start with a digit: v1.2.3-4-gabc-dirty → 1.2.3+4.gabc+dirty,
# v1.3.0-rc1 → 1.3.0~rc1 (sorts before 1.3.0); without a tag, 0.0.0~git<YYYYMMDD of
# EPOCH>.<hash>, which sorts before any release.
set -eu
v=$1
case "$v" in
v[0-9]*)
	echo "${v#v}" | sed -e 's/-\([0-9]*\)-g\([0-9a-f]*\)/+\1.g\2/' -e 's/-dirty$/+dirty/' -e 's/-/~/g'
	;;
*)
	echo "0.0.0~git$(TZ=UTC date -d "@$2" +%Y%m%d).$(echo "$v" | tr -- - .)"
	;;
esac
