package manifest

import (
	"encoding/json"
	"slices"
)

// resourceMeta is a resource's labels and annotations, each as canonical JSON (keys sorted,
// as encoding/json writes a map) or empty when there are none. That is the form in which
// they enter MetaHash, and a compact one for the cache.
type resourceMeta struct{ labels, annotations string }

// metaSets gives the resources of one file one resourceMeta per distinct pair of sets: a
// file's resources mostly share theirs. Sharing across files would need a table pruned as
// the cache is, for little more gain. The key is the two encodings joined by a NUL byte,
// which an encoding never holds (JSON escapes it), and the resourceMeta's strings are parts
// of it.
type metaSets map[string]*resourceMeta

// get returns the shared resourceMeta for labels and annotations, nil when both are empty.
func (ms metaSets) get(labels, annotations map[string]string) *resourceMeta {
	return metaOf(ms, labels, annotations)
}

// metaOf is get for either form of the sets: maps of strings, or a document's sets as
// decoded, each value a string (the caller checked), which are then not copied into maps
// of strings first.
func metaOf[V string | any](ms metaSets, labels, annotations map[string]V) *resourceMeta {
	if len(labels) == 0 && len(annotations) == 0 {
		return nil
	}
	var buf [256]byte
	b := appendStrings(buf[:0], labels)
	split := len(b)
	return ms.lookup(appendStrings(append(b, 0), annotations), split)
}

// lookup returns the resourceMeta of key b, whose labels' encoding ends at split, adding it
// when it is new.
func (ms metaSets) lookup(b []byte, split int) *resourceMeta {
	if m, ok := ms[string(b)]; ok {
		return m
	}
	key := string(b)
	m := &resourceMeta{key[:split], key[split+1:]}
	ms[key] = m
	return m
}

func (m *resourceMeta) sets() (labels, annotations string) {
	if m == nil {
		return "", ""
	}
	return m.labels, m.annotations
}

// encodeStrings returns m as encoding/json (sorted keys, no HTML escaping) would encode
// it, or "" when m is empty.
func encodeStrings(m map[string]string) string {
	return string(appendStrings(nil, m))
}

// appendStrings appends m as encodeStrings encodes it (nothing when m is empty); the values
// of a map[string]any must all be strings.
func appendStrings[V string | any](b []byte, m map[string]V) []byte {
	if len(m) == 0 {
		return b
	}
	var buf [8]string
	keys := buf[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	// The map's type is told once (a map in an interface costs nothing): a value of a type
	// parameter put in one would be copied for each.
	var value func(string) string
	switch m := any(m).(type) {
	case map[string]string:
		value = func(k string) string { return m[k] }
	case map[string]any:
		value = func(k string) string { return m[k].(string) }
	}
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, k)
		b = append(b, ':')
		b = appendJSONString(b, value(k))
	}
	return append(b, '}')
}

// appendJSONString appends s as a JSON string, spelled as marshalCanonical spells it.
// Label keys and values are nearly always plain ASCII, which needs no escaping; anything
// else goes through encoding/json so that both spellings agree by construction.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			q, _ := encodeCanonical(s) // a string always encodes
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// decodeStrings is the inverse of encodeStrings, giving an empty map for "". Every call
// returns a new map, which no cached value refers to. Strings without escapes, nearly all,
// are slices of s rather than copies: a Set of many resources would otherwise copy every
// label of the repository.
func decodeStrings(s string) map[string]string {
	m := map[string]string{}
	// s was written by encodeStrings: {"k":"v",...} with no whitespace.
	for i := 1; i < len(s) && s[i] == '"'; {
		var k, v string
		k, i = jsonString(s, i)
		v, i = jsonString(s, i+1) // past ':'
		m[k] = v
		i++ // past ',' or '}'
	}
	return m
}

// jsonString decodes the JSON string starting at s[i], returning it and the index after
// its closing quote.
func jsonString(s string, i int) (string, int) {
	escaped := false
	j := i + 1
	for ; j < len(s) && s[j] != '"'; j++ {
		if s[j] == '\\' {
			escaped = true
			j++
		}
	}
	if !escaped {
		return s[i+1 : j], j + 1
	}
	var out string
	_ = json.Unmarshal([]byte(s[i:j+1]), &out) // encoding/json wrote it
	return out, j + 1
}

// metaKey is what MetaHash depends on besides the file.
type metaKey struct {
	apiVersion sym
	meta       *resourceMeta
	dependsOn  string // docDeps.key: canonical JSON of the dependsOn targets, "" when none
}

// metaHasher computes MetaHash, the hex sha256 of the canonical JSON of
// {apiVersion, labels, annotations, file} and, when the resource has dependsOn entries,
// dependsOn (its targets sorted, namespaces filled in): an edit of dependsOn alone is a
// change of metadata, and resources without it keep the hash they had before dependsOn
// existed. It is not cached with the documents: resources
// of one file mostly share all of these, so a memo per file makes it cheap, and the
// resources sharing a hash share its string too.
type metaHasher struct {
	file string
	memo map[metaKey]string
	buf  []byte
}

// hash returns the MetaHash of a resource in file. Resources must come file by file: the
// memo holds one file's hashes.
func (h *metaHasher) hash(file string, k metaKey) string {
	if file != h.file || h.memo == nil {
		h.file = file
		if h.memo == nil {
			h.memo = map[metaKey]string{}
		}
		clear(h.memo)
	}
	if s, ok := h.memo[k]; ok {
		return s
	}
	labels, annotations := k.meta.sets()
	// The keys in the order encoding/json sorts them; an absent set is an empty object.
	b := append(h.buf[:0], `{"annotations":`...)
	b = appendSet(b, annotations)
	b = append(b, `,"apiVersion":`...)
	b = appendJSONString(b, k.apiVersion.String())
	if k.dependsOn != "" {
		b = append(b, `,"dependsOn":`...)
		b = append(b, k.dependsOn...)
	}
	b = append(b, `,"file":`...)
	b = appendJSONString(b, file)
	b = append(b, `,"labels":`...)
	b = appendSet(b, labels)
	b = append(b, '}')
	h.buf = b
	s := hashJSON(b)
	h.memo[k] = s
	return s
}

func appendSet(b []byte, set string) []byte {
	if set == "" {
		return append(b, "{}"...)
	}
	return append(b, set...)
}
