//go:build !linux

package pgtest

// clusterBase returns "" for os.TempDir().
func clusterBase() string { return "" }
