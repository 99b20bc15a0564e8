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
	}{
		{"auto without a container limit", MemoryLimit{}, 0, false, DefaultMemoryLimit},
		{"auto in a container", MemoryLimit{}, gib, false, gib * 9 / 10},
		{"auto in a container with the private database", MemoryLimit{}, gib, true, gib / 2},
		{"auto in a tiny container", MemoryLimit{}, 40 << 20, true, minMemoryLimit},
		{"a size wins over the container", MemoryLimit{Bytes: 300 << 20}, gib, false, 300 << 20},
		{"off", MemoryLimit{Off: true}, gib, false, 0},
	}
	for _, tc := range cases {
		if got, from := tc.setting.Resolve(tc.container, tc.private); got != tc.want || from == "" {
			t.Errorf("%s: %d (%s), want %d", tc.name, got, from, tc.want)
		}
	}
}
