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
	// DefaultMemoryLimit is the soft limit without a container limit while the live heap is
	// small: above the working set of a first sync of 100,000 resources, so that the runtime
	// collects before its heap doubles that working set. Once FollowingLimit gives more
	// (the live heap and half of it again, with the runtime's other memory: from about 85 MiB
	// of live heap) the limit follows the live heap: a fixed limit below the live heap would
	// make the collector run without pause.
	DefaultMemoryLimit = 128 << 20
	// FollowHeadroom is the share of the live heap that the limit without a container limit
	// leaves the heap to grow by before a collection, once FollowingLimit passes
	// DefaultMemoryLimit: about a collection per half the live heap allocated, as GOGC=50
	// would.
	FollowHeadroom = 0.5
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
// privateDatabase says that trueup runs its own PostgreSQL. follow says that the limit is
// a floor that follows the live heap after every collection (FollowingLimit): auto without
// a container limit, where nothing outside the process bounds it.
func (m MemoryLimit) Resolve(container int64, privateDatabase bool) (limit int64, follow bool, from string) {
	switch {
	case m.Off:
		return 0, false, "server.memoryLimit: off"
	case m.Bytes > 0:
		return m.Bytes, false, "server.memoryLimit"
	case container > 0:
		share := ContainerShare
		if privateDatabase {
			share = PrivateDatabaseShare
		}
		return max(int64(float64(container)*share), minMemoryLimit), false, fmt.Sprintf("%.0f%% of the container's limit", share*100)
	}
	return DefaultMemoryLimit, true, "default (no container limit): 128 MiB, or the live heap and half of it when more"
}

// FollowingLimit is the soft limit, given floor (Resolve's limit), after a collection that
// left live bytes of heap and other bytes of memory the runtime counts against the limit
// beside the heap's objects and the room it can allocate in (stacks, its own metadata, the
// unused space of the heap's spans, which a fragmented heap cannot fill): floor, or room
// for the live heap to grow by FollowHeadroom when that is more. The collector then runs
// about once per that much allocated, never without pause, and the heap's objects stay
// within half again their live size.
func FollowingLimit(floor int64, live, other uint64) int64 {
	want := live + uint64(float64(live)*FollowHeadroom) + other
	if want > 1<<62 {
		want = 1 << 62
	}
	return max(floor, int64(want))
}
