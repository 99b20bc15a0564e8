package daemon

import (
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"

	"github.com/trueup-dev/trueup/internal/config"
)

// setMemoryLimit gives the Go runtime its soft memory limit (server.memoryLimit), so that a
// sync of many resources makes the runtime collect sooner rather than grow past what the
// container allows. GOMEMLIMIT, when set, has been applied by the runtime and is left alone.
func setMemoryLimit(cfg *config.Config, logger *slog.Logger) {
	if env := os.Getenv("GOMEMLIMIT"); env != "" {
		logger.Info("memory limit", "limit", env, "from", "GOMEMLIMIT")
		return
	}
	limit, from := cfg.Server.MemoryLimit.Resolve(cgroupMemoryLimit("/"), cfg.Database.URL == "")
	if limit == 0 {
		logger.Info("memory limit", "limit", "none", "from", from)
		return
	}
	debug.SetMemoryLimit(limit)
	logger.Info("memory limit", "limit_mib", limit>>20, "from", from)
}

// cgroupMemoryLimit returns the memory limit of the cgroup this process runs in, the
// smallest along its path (cgroup v2 memory.max, v1 memory.limit_in_bytes), or 0 when
// there is none or it cannot be read. root is "/" but for tests.
func cgroupMemoryLimit(root string) int64 {
	data, err := os.ReadFile(filepath.Join(root, "proc/self/cgroup"))
	if err != nil {
		return 0
	}
	var limit int64
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		// hierarchy-id:controllers:path; v2 is "0::/path".
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		var dir, file string
		switch {
		case f[0] == "0" && f[1] == "":
			dir, file = "sys/fs/cgroup", "memory.max"
		case slices.Contains(strings.Split(f[1], ","), "memory"):
			dir, file = "sys/fs/cgroup/memory", "memory.limit_in_bytes"
		default:
			continue
		}
		// In a container the cgroup file system is often its own cgroup's, mounted at the
		// root: the path then does not exist below it, and the root's file is the one.
		for p := path.Clean("/" + f[2]); ; p = path.Dir(p) {
			if n := readLimit(filepath.Join(root, dir, p, file)); n > 0 && (limit == 0 || n < limit) {
				limit = n
			}
			if p == "/" {
				break
			}
		}
	}
	return limit
}

// readLimit reads a cgroup memory limit file; "max" and v1's page-rounded MaxInt64 are
// no limit (0).
func readLimit(name string) int64 {
	data, err := os.ReadFile(name)
	if err != nil {
		return 0
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil || n <= 0 || n >= 1<<62 {
		return 0
	}
	return n
}
