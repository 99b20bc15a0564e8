package sealed

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"
)

// revealCacheSize bounds the decrypted files a Revealer keeps: enough for the files being
// reconciled at once, so that the resources of one file do not each decrypt it.
const revealCacheSize = 64

// Revealer recovers the encrypted fields of a stored spec when its action is called, with
// the keys of the resource's source. Safe for concurrent use.
type Revealer struct {
	keys map[string]*Keys // by source name

	mu    sync.Mutex
	cache map[revealKey]map[string]*Doc // the documents of opened files, never their plaintext
}

// revealKey is a file as one source stores it: a file is opened only with its own source's
// keys, even when another source holds the same bytes.
type revealKey struct {
	source string
	sha    string // of the encrypted file, hex
}

// NewRevealer returns a Revealer for the sources' keys.
func NewRevealer(keys map[string]*Keys) *Revealer {
	return &Revealer{keys: keys, cache: map[revealKey]map[string]*Doc{}}
}

// Reveal returns spec with every marker of the resource kind/namespace/name replaced by its
// plaintext from the encrypted file sealed (file is its path, whose extension tells the
// format), and the plaintexts, which the caller scrubs from whatever the action returns. A
// marker that does not match the file's value (the file and the spec were not stored
// together) is an error, never a wrong value.
func (r *Revealer) Reveal(source, file, kind, namespace, name, sealed string, spec json.RawMessage) (json.RawMessage, []string, error) {
	sum := sha256.Sum256([]byte(sealed))
	return r.reveal(source, file, kind, namespace, name, hex.EncodeToString(sum[:]), func() (string, error) { return sealed, nil }, spec)
}

// RevealStored is Reveal for a file stored by its sha256 (hex): content reads it only when
// this Revealer has not opened that file for that source yet.
func (r *Revealer) RevealStored(source, file, kind, namespace, name, sha string, content func() (string, error), spec json.RawMessage) (json.RawMessage, []string, error) {
	return r.reveal(source, file, kind, namespace, name, sha, content, spec)
}

func (r *Revealer) reveal(source, file, kind, namespace, name, sha string, content func() (string, error), spec json.RawMessage) (json.RawMessage, []string, error) {
	ck := revealKey{source: source, sha: sha}
	r.mu.Lock()
	docs, ok := r.cache[ck]
	r.mu.Unlock()
	if !ok {
		keys, ok := r.keys[source]
		if !ok {
			return nil, nil, fmt.Errorf("%s is encrypted with SOPS, and source %s has no decryption keys on this replica", file, source)
		}
		sealed, err := content()
		if err != nil {
			return nil, nil, fmt.Errorf("%s: read the encrypted file: %w", file, err)
		}
		if got := sha256.Sum256([]byte(sealed)); hex.EncodeToString(got[:]) != sha {
			return nil, nil, fmt.Errorf("%s: the stored encrypted file does not match its hash", file)
		}
		o, err := Open(file, []byte(sealed), keys)
		if err != nil {
			if p, ok := err.(*Problem); ok && p.Line > 0 {
				return nil, nil, fmt.Errorf("%s:%d: %s", file, p.Line, p.Msg)
			}
			return nil, nil, fmt.Errorf("%s: %w", file, err)
		}
		r.mu.Lock()
		if len(r.cache) >= revealCacheSize {
			for k := range r.cache {
				delete(r.cache, k)
				break
			}
		}
		docs = o.Docs
		r.cache[ck] = docs
		r.mu.Unlock()
	}
	d, ok := docs[Identity(kind, namespace, name)]
	if !ok {
		return nil, nil, fmt.Errorf("%s: no encrypted document for %s/%s/%s", file, kind, namespace, name)
	}
	// The stored markers must be the file's: a spec and a file not stored together would
	// otherwise hand the action a wrong value.
	if err := checkMarkers(spec, d.Fields); err != nil {
		return nil, nil, err
	}
	out, err := patch(spec, d.Fields, func(f Field) any { return f.Value }, false)
	if err != nil {
		return nil, nil, err
	}
	return out, d.Values(), nil
}

func checkMarkers(spec json.RawMessage, fields []Field) error {
	var root any
	if err := json.Unmarshal(spec, &root); err != nil {
		return err
	}
	for _, f := range fields {
		v := root
		for _, step := range f.Path {
			v = child(v, step)
		}
		if s, _ := v.(string); s != f.Marker() {
			return fmt.Errorf("spec%s: the stored spec does not match the encrypted file; it is written again on the next sync", Pointer(f.Path))
		}
	}
	return nil
}

func sha256Sum(b []byte) [32]byte { return sha256.Sum256(b) }
