package manifest

import (
	"fmt"

	"github.com/trueup-dev/trueup/sources"
)

// Default per-revision caps. They sit well above what a large repository holds (the sync
// benchmarks go to 100k resources, one file each) and bound what a broken or hostile commit
// can make the controller hold and store.
const (
	DefaultMaxFiles     = 200_000
	DefaultMaxDocuments = 250_000
	DefaultMaxResources = 200_000
	// DefaultMaxResourcesPerSet caps the resources one ResourceSet generates.
	DefaultMaxResourcesPerSet = 10_000
)

// Limits caps what one revision may contain. Zero fields take the defaults. Going over a cap
// rejects the revision; nothing of it is applied.
type Limits struct {
	MaxFiles     int // manifest files
	MaxDocuments int // non-empty YAML documents, types and resources
	MaxResources int // written and generated resources together
	// MaxResourcesPerSet caps what one ResourceSet generates; checked before anything is
	// generated.
	MaxResourcesPerSet int
}

func (l Limits) withDefaults() Limits {
	if l.MaxFiles <= 0 {
		l.MaxFiles = DefaultMaxFiles
	}
	if l.MaxDocuments <= 0 {
		l.MaxDocuments = DefaultMaxDocuments
	}
	if l.MaxResources <= 0 {
		l.MaxResources = DefaultMaxResources
	}
	if l.MaxResourcesPerSet <= 0 {
		l.MaxResourcesPerSet = DefaultMaxResourcesPerSet
	}
	return l
}

// overCap is the problem of a revision over one of its caps. It names no file: the
// revision as a whole is too large.
func overCap(what string, n, limit int) ValidationError {
	return ValidationError{Msg: fmt.Sprintf("revision has %d %s, more than the limit of %d (limits.max%s in the controller config)",
		n, what, limit, capName(what))}
}

func capName(what string) string {
	switch what {
	case "files":
		return "Files"
	case "documents":
		return "Documents"
	}
	return "Resources"
}

// refused is the problem of a file the source would not read.
func refused(f sources.File) ValidationError {
	return ValidationError{File: f.Path, Msg: f.Refused}
}

func countResources(docs []placed) int {
	n := 0
	for _, p := range docs {
		if p.doc.res != nil {
			n++
		}
	}
	return n
}
