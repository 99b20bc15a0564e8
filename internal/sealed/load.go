package sealed

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"sync"

	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/redact"
	"github.com/trueup-dev/trueup/sources"
)

// Opener decrypts the encrypted files of one source's revisions. Between loads it keeps the
// files it opened, by content hash, so a revision that changes another file decrypts nothing
// again; like the loader's cache it keeps only what the latest load used. The plaintext
// lives in memory only.
type Opener struct {
	keys     *Keys
	mu       sync.Mutex
	cache    map[string]*Opened
	revealer *Revealer // for Reveal, made on first use
}

// NewOpener returns an Opener for keys (nil: the source has none, and an encrypted file is
// a problem of the revision).
func NewOpener(keys *Keys) *Opener { return &Opener{keys: keys, cache: map[string]*Opened{}} }

// Reveal puts back the encrypted fields of a stored spec with this source's keys (the
// applied specs transition rules compare with).
func (op *Opener) Reveal(file, kind, namespace, name, sealed string, spec json.RawMessage) (json.RawMessage, error) {
	op.mu.Lock()
	if op.revealer == nil {
		op.revealer = NewRevealer(map[string]*Keys{"": op.keys})
	}
	r := op.revealer
	op.mu.Unlock()
	out, _, err := r.Reveal("", file, kind, namespace, name, sealed, spec)
	return out, err
}

// Revision is a revision's files made ready for the loader.
type Revision struct {
	Files  []sources.File      // encrypted files replaced by their plaintext
	opened map[string]*Opened  // by path
	raw    map[string][]byte   // encrypted content by path
	values map[string]struct{} // every plaintext, for Scrub
}

// Prepare decrypts the encrypted files among files. A file that cannot be decrypted is a
// problem at its file:line, which rejects the revision like any invalid manifest.
func (op *Opener) Prepare(files []sources.File) (*Revision, manifest.Errors) {
	rv := &Revision{Files: files}
	var errs manifest.Errors
	var keep map[string]*Opened
	for i, f := range files {
		// An unread file is one whose resources the loader holds from that content, which it
		// does only for files it does not rewrite: not encrypted.
		if f.Refused != "" || f.Unread || !IsEncrypted(f.Data) {
			continue
		}
		if rv.opened == nil {
			rv.Files = append([]sources.File(nil), files...)
			rv.opened, rv.raw, rv.values, keep = map[string]*Opened{}, map[string][]byte{}, map[string]struct{}{}, map[string]*Opened{}
		}
		key := f.Hash
		if key == "" {
			key = fmt.Sprintf("sha256:%x", sha256Sum(f.Data))
		}
		op.mu.Lock()
		o, ok := op.cache[key]
		op.mu.Unlock()
		if !ok {
			var err error
			o, err = Open(f.Path, f.Data, op.keys)
			if err != nil {
				errs = append(errs, atFile(f.Path, err))
				continue
			}
		}
		keep[key] = o
		rv.opened[f.Path], rv.raw[f.Path] = o, f.Data
		for _, d := range o.Docs {
			for _, v := range d.Values() {
				rv.values[v] = struct{}{}
			}
		}
		// The loader caches parses by Hash: the plaintext follows from the ciphertext, so
		// a key derived from the encrypted content is right and costs no hashing.
		rv.Files[i] = sources.File{Path: f.Path, Hash: "sops:" + key, Data: o.Plain}
	}
	if keep != nil || len(op.cache) > 0 {
		op.mu.Lock()
		op.cache = keep
		if op.cache == nil {
			op.cache = map[string]*Opened{}
		}
		op.mu.Unlock()
	}
	return rv, errs
}

func atFile(file string, err error) manifest.ValidationError {
	if p, ok := err.(*Problem); ok {
		return manifest.ValidationError{File: file, Line: p.Line, Msg: p.Msg}
	}
	return manifest.ValidationError{File: file, Msg: err.Error()}
}

// Redact replaces in set every encrypted field of a resource from an encrypted file by its
// marker, recomputes the spec hash over that, and keeps the encrypted file with the
// resource (manifest.Resource.Sealed) so that Reveal can recover the values at call time.
func (rv *Revision) Redact(set *manifest.Set) error {
	if rv.opened == nil || set == nil {
		return nil
	}
	if set.Packed() {
		// A load with Rewritten files is never packed (manifest.Options.Packed).
		return errors.New("sealed: the resources of a packed Set cannot be redacted")
	}
	used := map[*Doc]bool{}
	for i := range set.Resources {
		r := &set.Resources[i]
		o, ok := rv.opened[r.File]
		if !ok {
			continue
		}
		d, ok := o.Docs[Identity(r.Kind, r.Namespace, r.Name)]
		if !ok {
			continue
		}
		used[d] = true
		// Fail closed: the loader's value at each path must be the decrypted one, or the
		// paths are not the loader's and a marker would land on the wrong field.
		spec, err := patch(r.Spec, d.Fields, func(f Field) any { return f.Marker() }, true)
		if err != nil {
			return fmt.Errorf("%s:%d: %w", r.File, r.Line, err)
		}
		for _, v := range d.Values() {
			if Scrubbable(v) && bytes.Contains(spec, []byte(jsonString(v))) {
				return fmt.Errorf("%s:%d: an encrypted value is still in the spec after redaction", r.File, r.Line)
			}
		}
		r.Spec, r.SpecHash, r.Sealed = spec, manifest.HashJSON(spec), string(rv.raw[r.File])
		// The encrypted file's recipients may change while every value stays (sops
		// updatekeys): the metadata hash follows the file, so the stored file is rewritten.
		r.MetaHash = manifest.HashJSON([]byte(r.MetaHash + "\x00sealed\x00" + manifest.HashJSON(rv.raw[r.File])))
	}
	for path, o := range rv.opened {
		for id, d := range o.Docs {
			if !used[d] {
				return fmt.Errorf("%s:%d: encrypted values of %s belong to no resource of the revision", path, d.Fields[0].Line, id)
			}
		}
	}
	return nil
}

func jsonString(v string) string {
	b, _ := json.Marshal(v)
	return string(b[1 : len(b)-1])
}

// Scrub replaces every decrypted value of the revision in s by ***: schema errors may quote
// a value, and the revision's errors are stored and shown.
func (rv *Revision) Scrub(s string) string {
	if len(rv.values) == 0 {
		return s
	}
	return replacer(rv.values)(s)
}

// ScrubErrors scrubs every message of errs.
func (rv *Revision) ScrubErrors(errs manifest.Errors) manifest.Errors {
	if len(rv.values) == 0 {
		return errs
	}
	r := replacer(rv.values)
	for i := range errs {
		errs[i].Msg = r(errs[i].Msg)
	}
	return errs
}

// Scrubbable reports whether v is long enough to be replaced in messages: "1" or "true"
// would turn every message into stars and hide nothing.
func Scrubbable(v string) bool {
	return len(v) >= redact.MinLength && v != "true" && v != "false" && v != "null"
}

func replacer(values map[string]struct{}) func(string) string {
	var all []string
	for v := range values {
		if Scrubbable(v) {
			all = append(all, v)
		}
	}
	return redact.Replacer(all)
}

// patch sets each field's path in spec (canonical JSON) to value(f). With check, the value
// found there must be the field's plaintext (Redact: the spec is the loader's plaintext).
func patch(spec json.RawMessage, fields []Field, value func(Field) any, check bool) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(spec))
	dec.UseNumber()
	var root any
	if err := dec.Decode(&root); err != nil {
		return nil, err
	}
	for _, f := range fields {
		if len(f.Path) == 0 {
			continue
		}
		parent := root
		for _, step := range f.Path[:len(f.Path)-1] {
			parent = child(parent, step)
		}
		if check && !sameValue(child(parent, f.Path[len(f.Path)-1]), f.Value) {
			return nil, fmt.Errorf("spec%s: the encrypted field does not match the loaded spec", Pointer(f.Path))
		}
		switch k := f.Path[len(f.Path)-1].(type) {
		case string:
			m, ok := parent.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("spec%s: the encrypted field is not in the spec", Pointer(f.Path))
			}
			m[k] = value(f)
		case int:
			a, ok := parent.([]any)
			if !ok || k >= len(a) {
				return nil, fmt.Errorf("spec%s: the encrypted field is not in the spec", Pointer(f.Path))
			}
			a[k] = value(f)
		}
	}
	return manifest.Canonical(mustJSON(root))
}

// sameValue compares a loaded JSON value with a decrypted one (numbers by their text, which
// the loader keeps canonical).
func sameValue(loaded, decrypted any) bool {
	switch d := decrypted.(type) {
	case json.Number:
		l, ok := loaded.(json.Number)
		if !ok {
			return false
		}
		if l == d {
			return true
		}
		lf, err1 := l.Float64()
		df, err2 := d.Float64()
		return err1 == nil && err2 == nil && lf == df
	default:
		return loaded == decrypted
	}
}

func child(v any, step any) any {
	switch k := step.(type) {
	case string:
		if m, ok := v.(map[string]any); ok {
			return m[k]
		}
	case int:
		if a, ok := v.([]any); ok && k < len(a) {
			return a[k]
		}
	}
	return nil
}

func mustJSON(v any) json.RawMessage {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'})
}

// Load is a loader's Load with the revision's encrypted files opened first: errors are
// scrubbed of every decrypted value, and the Set's encrypted fields are markers.
//
// check, when set, runs on the loaded Set before it is redacted, with plaintext specs (the
// syncer's transition rules); its manifest.Errors are scrubbed like the loader's. It must not
// keep the Set: one that Load refuses is handed back to the loader (Loader.Release).
func Load(l *manifest.Loader, op *Opener, files []sources.File, opts manifest.Options, check func(*manifest.Set) error) (out *manifest.Set, _ error) {
	if op == nil {
		op = NewOpener(nil)
	}
	rv, errs := op.Prepare(files)
	opts.Rewritten = rewritten(opts.Rewritten, maps.Keys(rv.opened))
	set, err := l.Load(rv.Files, opts)
	if opts.DropData {
		// The loader gave up the data of rv.Files, files or a copy of it with the opened
		// files replaced: files is the caller's to give up as well.
		for i := range files {
			if rv.Files[i].Data == nil {
				files[i].Data, files[i].Unread = nil, rv.Files[i].Unread
			}
		}
	}
	if set != nil {
		// A Set this returns is the caller's to hand back; one it refuses is handed back
		// here, as the caller would have (the loader may encode it at rest).
		defer func() {
			if out == nil {
				l.Release(set)
			}
		}()
	}
	if len(errs) > 0 {
		// Every problem at once: the loader's, and the files that could not be opened
		// (which the loader saw as what they are, encrypted text).
		var lerrs manifest.Errors
		if err != nil {
			if !errorsAs(err, &lerrs) {
				return nil, err
			}
		}
		all := append(manifest.Errors{}, errs...)
		for _, e := range lerrs {
			if _, opened := rv.opened[e.File]; opened || !failed(errs, e.File) {
				all = append(all, e)
			}
		}
		return nil, manifest.SortErrors(rv.ScrubErrors(all))
	}
	if err != nil {
		var lerrs manifest.Errors
		if errorsAs(err, &lerrs) {
			return nil, rv.ScrubErrors(lerrs)
		}
		return nil, err
	}
	if check != nil {
		if err := check(set); err != nil {
			var cerrs manifest.Errors
			if errorsAs(err, &cerrs) {
				return nil, rv.ScrubErrors(cerrs)
			}
			return nil, err // check's own failure (a database error), returned as it is
		}
	}
	if err := rv.Redact(set); err != nil {
		return nil, errors.New(rv.Scrub(err.Error()))
	}
	return set, nil
}

func failed(errs manifest.Errors, file string) bool {
	for _, e := range errs {
		if e.File == file {
			return true
		}
	}
	return false
}

func errorsAs(err error, target *manifest.Errors) bool { return errors.As(err, target) }

// rewritten is the caller's Options.Rewritten with paths added: the encrypted files, whose
// resources Redact (or LoadMasked) changes once loaded, so that the loader never takes them
// from the last Set.
func rewritten(caller map[string]bool, paths iter.Seq[string]) map[string]bool {
	out := maps.Clone(caller)
	for p := range paths {
		if out == nil {
			out = map[string]bool{}
		}
		out[p] = true
	}
	return out
}
