// Package e2e holds trueup's end-to-end tests: real Git repositories, a real PostgreSQL, the
// syncer, the reconciler, the exec action and the HTTP API wired together as `trueup serve`
// wires them. It has no non-test code.
package e2e
