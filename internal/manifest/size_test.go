package manifest

import (
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// blobType declares Blob with an open schema, so that only the limits can reject a Blob.
const blobType = `apiVersion: trueup.dev/v1
kind: ResourceType
metadata: {name: Blob}
spec:
  group: example.com
  versions: [{name: v1, schema: {type: object}}]
  action: {name: store}
`

// aliasBomb is a small manifest whose spec repeats a size-byte string n+1 times through
// aliases: a few node aliases, a large decoded size.
func aliasBomb(size, n int) string {
	return "apiVersion: example.com/v1\nkind: Blob\nmetadata: {name: b}\nspec:\n" +
		"  a: &a " + strings.Repeat("x", size) + "\n" +
		"  b: [" + strings.TrimSuffix(strings.Repeat("*a, ", n), ", ") + "]\n"
}

func TestAliasExpansionOverOneMiB(t *testing.T) {
	t.Parallel()
	bomb := aliasBomb(100_000, 15) // 100 KB in the file, 1.6 MB decoded
	if len(bomb) > 110_000 {
		t.Fatalf("bomb is %d bytes", len(bomb))
	}
	_, err := NewLoader().Load(files("types.yaml", blobType, "a.yaml", bomb), Options{})
	want := []string{"a.yaml:4: spec: decoded size exceeds 1 MiB (after expanding YAML aliases)"}
	if got := problems(t, err); !reflect.DeepEqual(got, want) {
		t.Errorf("errors = %q, want %q", got, want)
	}

	// The same spec below the bound is accepted: aliases themselves are fine.
	set, err := NewLoader().Load(files("types.yaml", blobType, "a.yaml", aliasBomb(100_000, 8)), Options{})
	if err != nil || len(set.Resources) != 1 {
		t.Errorf("900 KB decoded: err = %v", err)
	}
}

func TestAliasBombBoundedMemory(t *testing.T) {
	// Not parallel: it measures the process's allocations.
	bomb := aliasBomb(100_000, 1000) // 104 KB in the file, 100 MB decoded
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := NewLoader().Load(files("types.yaml", blobType, "a.yaml", bomb), Options{})
	runtime.ReadMemStats(&after)
	want := []string{"a.yaml:4: spec: decoded size exceeds 1 MiB (after expanding YAML aliases)"}
	if got := problems(t, err); !reflect.DeepEqual(got, want) {
		t.Errorf("errors = %q, want %q", got, want)
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("100 MB alias expansion: %d KiB allocated", alloc>>10)
	if alloc > 50<<20 {
		t.Errorf("allocated %d MiB, want under 50 MiB", alloc>>20)
	}

	// Many documents that each stay under the bound share a per-file one.
	many := strings.Repeat("---\n"+aliasBomb(100_000, 9), 10)
	_, err = NewLoader().Load(files("types.yaml", blobType, "a.yaml", many), Options{})
	if got := problems(t, err); !strings.Contains(strings.Join(got, "\n"), ":61: spec: decoded size of this file exceeds 8 MiB (after expanding YAML aliases)") {
		t.Errorf("errors = %q", got)
	}
}
