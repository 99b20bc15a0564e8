package manifest

import (
	"strings"
	"unique"
)

// sym is an interned string. A repository repeats a few apiVersions, kinds and namespaces
// across thousands of documents; the cache keeps one copy of each, and a sym costs one
// word where a string costs two. unique drops a value once no sym refers to it, so the
// interned values follow what the cache holds, like the cache itself.
//
// unique costs a couple of hundred bytes per distinct value, which only values shared by
// many documents repay: names and label sets are not interned this way.
//
// The zero sym is the empty string.
type sym struct{ h unique.Handle[string] }

func intern(s string) sym {
	if s == "" {
		return sym{}
	}
	return sym{unique.Make(s)}
}

func (s sym) String() string {
	if s == (sym{}) {
		return ""
	}
	return s.h.Value()
}

// compareSyms orders syms as their strings; equal syms, the common case when sorting by
// namespace or kind, need no look at the strings.
func compareSyms(a, b sym) int {
	if a == b {
		return 0
	}
	return strings.Compare(a.String(), b.String())
}
