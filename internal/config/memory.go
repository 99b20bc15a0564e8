package config

import (
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/trueup-dev/trueup/internal/envvar"
)

// Memory limit defaults (server.memoryLimit: auto).
const (
	// DefaultMemoryLimit is the soft limit without a container limit: above the working set
	// of a first sync of 100,000 resources, the scale trueup is sized for (DESIGN §12), so
	// that the runtime collects before its heap doubles that working set. A larger
	// installation raises it.
	DefaultMemoryLimit = 128 << 20
	// ContainerShare of a container's memory limit is given to the Go runtime; the rest is
	// for what the runtime does not count (the binary's pages, the kernel's per-process
	// memory).
	ContainerShare = 0.9
	// PrivateDatabaseShare replaces ContainerShare when trueup runs its private PostgreSQL,
	// which lives in the same container and needs room of its own.
	PrivateDatabaseShare = 0.5
	// minMemoryLimit: below it the runtime would collect nearly all the time.
	minMemoryLimit = 32 << 20
)

// MemoryLimit is server.memoryLimit: the Go runtime's soft memory limit. The zero value is
// auto.
type MemoryLimit struct {
	Bytes int64 // the limit; 0 means auto
	Off   bool  // no limit
}

// parseMemoryLimit reads "auto", "off", or a size as GOMEMLIMIT spells it: a number of
// bytes with an optional unit B, KiB, MiB, GiB or TiB ("512MiB").
func parseMemoryLimit(s string) (MemoryLimit, error) {
	switch s {
	case "", "auto":
		return MemoryLimit{}, nil
	case "off":
		return MemoryLimit{Off: true}, nil
	}
	num, shift := s, 0
	for _, u := range []struct {
		suffix string
		shift  int
	}{{"KiB", 10}, {"MiB", 20}, {"GiB", 30}, {"TiB", 40}, {"B", 0}} {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			num, shift = n, u.shift
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || n > (1<<62)>>shift {
		return MemoryLimit{}, fmt.Errorf("%q is not auto, off or a size such as 512MiB", s)
	}
	if n <<= shift; n < minMemoryLimit {
		return MemoryLimit{}, fmt.Errorf("%q is below %dMiB", s, minMemoryLimit>>20)
	}
	return MemoryLimit{Bytes: n}, nil
}

// UnmarshalYAML accepts what parseMemoryLimit does.
func (m *MemoryLimit) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: memoryLimit must be auto, off or a size such as 512MiB", n.Line)
	}
	if envvar.Ref.MatchString(n.Value) {
		return nil // the unknown-field check runs before ${VAR} expansion
	}
	v, err := parseMemoryLimit(strings.TrimSpace(n.Value))
	if err != nil {
		return fmt.Errorf("line %d: memoryLimit: %w", n.Line, err)
	}
	*m = v
	return nil
}

// Resolve gives the limit for runtime/debug.SetMemoryLimit, 0 for none, and where it came
// from. container is the container's (cgroup's) memory limit, 0 when there is none;
// privateDatabase says that trueup runs its own PostgreSQL.
func (m MemoryLimit) Resolve(container int64, privateDatabase bool) (int64, string) {
	switch {
	case m.Off:
		return 0, "server.memoryLimit: off"
	case m.Bytes > 0:
		return m.Bytes, "server.memoryLimit"
	case container > 0:
		share := ContainerShare
		if privateDatabase {
			share = PrivateDatabaseShare
		}
		return max(int64(float64(container)*share), minMemoryLimit), fmt.Sprintf("%.0f%% of the container's limit", share*100)
	}
	return DefaultMemoryLimit, "default (no container limit)"
}
