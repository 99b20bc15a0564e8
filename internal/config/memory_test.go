package config

import (
	"strings"
	"testing"
)

func TestMemoryLimitSetting(t *testing.T) {
	t.Parallel()
	cases := []struct {
		yaml string
		want MemoryLimit
	}{
		{"", MemoryLimit{}}, // absent: auto
		{"server: {memoryLimit: auto}\n", MemoryLimit{}},
		{"server: {memoryLimit: \"off\"}\n", MemoryLimit{Off: true}},
		{"server: {memoryLimit: 512MiB}\n", MemoryLimit{Bytes: 512 << 20}},
		{"server: {memoryLimit: 2GiB}\n", MemoryLimit{Bytes: 2 << 30}},
		{"server: {memoryLimit: 100000000}\n", MemoryLimit{Bytes: 100000000}},
		{"server: {memoryLimit: \"${MEM}\"}\n", MemoryLimit{Bytes: 256 << 20}},
	}
	for _, tc := range cases {
		c, err := Parse([]byte("log: {level: info}\n"+tc.yaml), "/x", env(map[string]string{"MEM": "256MiB"}))
		if err != nil {
			t.Errorf("%q: %v", tc.yaml, err)
			continue
		}
		if c.Server.MemoryLimit != tc.want {
			t.Errorf("%q: memoryLimit = %+v, want %+v", tc.yaml, c.Server.MemoryLimit, tc.want)
		}
	}
	for yaml, want := range map[string]string{
		"server: {memoryLimit: 512M}\n":       `line 1: memoryLimit: "512M" is not auto, off or a size`,
		"server: {memoryLimit: lots}\n":       `line 1: memoryLimit: "lots" is not auto`,
		"server: {memoryLimit: 1MiB}\n":       `line 1: memoryLimit: "1MiB" is below 32MiB`,
		"server: {memoryLimit: -5}\n":         `line 1: memoryLimit: "-5" is not auto`,
		"server: {memoryLimit: [1]}\n":        "line 1: memoryLimit must be auto, off or a size",
		"server: {memoryLimit: 9999999TiB}\n": `"9999999TiB" is not auto`,
		"server:\n  memoryLimits: 512MiB\n":   "line 2: field memoryLimits not found",
	} {
		if _, err := Parse([]byte(yaml), "/x", env(nil)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want it to contain %q", yaml, err, want)
		}
	}
}

func TestMemoryLimitResolve(t *testing.T) {
	t.Parallel()
	const gib = 1 << 30
	cases := []struct {
		name      string
		setting   MemoryLimit
		container int64
		private   bool
		want      int64
		follow    bool
	}{
		{"auto without a container limit", MemoryLimit{}, 0, false, DefaultMemoryLimit, true},
		{"auto without a container limit, private database", MemoryLimit{}, 0, true, DefaultMemoryLimit, true},
		{"auto in a container", MemoryLimit{}, gib, false, gib * 9 / 10, false},
		{"auto in a container with the private database", MemoryLimit{}, gib, true, gib / 2, false},
		{"auto in a tiny container", MemoryLimit{}, 40 << 20, true, minMemoryLimit, false},
		{"a size wins over the container", MemoryLimit{Bytes: 300 << 20}, gib, false, 300 << 20, false},
		{"a size without a container limit stays", MemoryLimit{Bytes: 300 << 20}, 0, false, 300 << 20, false},
		{"off", MemoryLimit{Off: true}, gib, false, 0, false},
		{"off without a container limit", MemoryLimit{Off: true}, 0, false, 0, false},
	}
	for _, tc := range cases {
		if got, follow, from := tc.setting.Resolve(tc.container, tc.private); got != tc.want || follow != tc.follow || from == "" {
			t.Errorf("%s: %d follow %t (%s), want %d follow %t", tc.name, got, follow, from, tc.want, tc.follow)
		}
	}
}

func TestFollowingLimit(t *testing.T) {
	t.Parallel()
	const mib = 1 << 20
	cases := []struct {
		name        string
		live, other uint64
		want        int64
	}{
		{"a small heap keeps the floor", 20 * mib, 10 * mib, DefaultMemoryLimit},
		{"a heap whose headroom reaches the floor keeps it", 80 * mib, 8 * mib, DefaultMemoryLimit},
		{"a heap past the floor gets half again", 200 * mib, 0, 300 * mib},
		{"what else the runtime counts is added", 200 * mib, 20 * mib, 320 * mib},
		{"a live heap above the floor never sits at the limit", 700 * mib, 30 * mib, 1080 * mib},
		{"no overflow", 1 << 62, 1 << 62, 1 << 62},
	}
	for _, tc := range cases {
		if got := FollowingLimit(DefaultMemoryLimit, tc.live, tc.other); got != tc.want {
			t.Errorf("%s: %d MiB, want %d MiB", tc.name, got/mib, tc.want/mib)
		}
	}
}
