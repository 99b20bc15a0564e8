package daemon

import (
	"os"
	"path/filepath"
	"testing"
)

func TestCgroupMemoryLimit(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		cgroup string
		files  map[string]string
		want   int64
	}{
		{"v2 container, namespaced", "0::/\n", map[string]string{"sys/fs/cgroup/memory.max": "536870912\n"}, 512 << 20},
		{"v2 unlimited", "0::/\n", map[string]string{"sys/fs/cgroup/memory.max": "max\n"}, 0},
		{"v2 systemd service, parent smaller", "0::/system.slice/trueup.service\n", map[string]string{
			"sys/fs/cgroup/system.slice/trueup.service/memory.max": "1073741824",
			"sys/fs/cgroup/system.slice/memory.max":                "268435456",
			"sys/fs/cgroup/memory.max":                             "max",
		}, 256 << 20},
		{"v1, path not mounted in the container", "12:cpu,cpuacct:/docker/abc\n4:memory:/docker/abc\n", map[string]string{
			"sys/fs/cgroup/memory/memory.limit_in_bytes": "268435456",
		}, 256 << 20},
		{"v1 unlimited", "4:memory:/\n", map[string]string{"sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712"}, 0},
		{"no cgroup files", "0::/\n", nil, 0},
	}
	for _, tc := range cases {
		root := t.TempDir()
		if tc.files == nil {
			tc.files = map[string]string{}
		}
		tc.files["proc/self/cgroup"] = tc.cgroup
		for name, data := range tc.files {
			p := filepath.Join(root, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if got := cgroupMemoryLimit(root); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}
