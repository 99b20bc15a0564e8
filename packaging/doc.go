// Package packaging holds no code: its folder holds what the .deb installs besides the
// binary (trueup.service, the default /etc/trueup/trueup.yaml, the maintainer scripts),
// nfpm's description of the package, and the container image's default config; its tests
// check them, and TestDeb the files of a built .deb (`make dist` and `make image` build them).
package packaging
