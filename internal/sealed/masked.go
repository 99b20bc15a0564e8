package sealed

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"maps"
	"strings"

	"github.com/getsops/sops/v3"
	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/sources"
)

// Applied is what a source applied of one resource of an encrypted file: its spec, markers
// in place of the encrypted fields, and the encrypted file it was applied from.
type Applied struct {
	Spec   json.RawMessage
	Sealed string
}

// LoadMasked loads files as Load does, but decrypts nothing: it holds no key. Each encrypted
// field reaches the loader as a marker, and the loader treats markers as values it does not
// know (manifest.Options.EncryptedUnknown), so neither the schema nor a rule (x-trueup-
// validations) can tell anything of a plaintext. A pull request is loaded this way: its
// author writes the types, and a rule on a decrypted value would be an oracle.
//
// A field whose ciphertext is the one applied at the same place of the same resource keeps
// the applied marker (so an encrypted file the pull request leaves alone compares equal);
// any other gets a marker of its ciphertext, which differs from the applied one: a file
// re-saved with sops shows its fields as changed. applied is asked once, for the resources
// of the encrypted files (kinds in lowercase), and answers by the keys it was given.
func LoadMasked(l *manifest.Loader, files []sources.File, opts manifest.Options,
	applied func([]manifest.ResourceKey) (map[manifest.ResourceKey]Applied, error), check func(*manifest.Set) error) (*manifest.Set, error) {
	type maskedFile struct {
		i    int
		docs []*Doc
		tree sops.Tree
	}
	var masked []maskedFile
	var errs manifest.Errors
	var keys []manifest.ResourceKey
	for i, f := range files {
		if f.Refused != "" || !IsEncrypted(f.Data) {
			continue
		}
		tree, docs, err := parseSealed(f.Path, f.Data)
		if err != nil {
			errs = append(errs, atFile(f.Path, err))
			continue
		}
		for _, d := range docs {
			if len(d.Fields) > 0 {
				keys = append(keys, appliedKey(d))
			}
		}
		masked = append(masked, maskedFile{i: i, docs: docs, tree: tree})
	}
	if len(errs) > 0 {
		return nil, manifest.SortErrors(errs)
	}
	var prev map[manifest.ResourceKey]Applied
	if len(keys) > 0 && applied != nil {
		var err error
		if prev, err = applied(keys); err != nil {
			return nil, err
		}
	}
	out := files
	raw := map[string][]byte{}
	if len(masked) > 0 {
		out = append([]sources.File(nil), files...)
	}
	for _, m := range masked {
		f := files[m.i]
		var fields []Field
		for _, d := range m.docs {
			old := appliedMarkers(prev[appliedKey(d)], f.Path, d)
			for _, fl := range d.Fields {
				if mk, ok := old[fl.cipher]; ok {
					fl.Value = mk
				} else {
					sum := sha256.Sum256([]byte("trueup preview marker\x00" + fl.cipher))
					fl.Value = MarkerPrefix + hex.EncodeToString(sum[:8])
				}
				fields = append(fields, fl)
			}
		}
		data, err := maskedPlain(f.Path, f.Data, m.tree, fields)
		if err != nil {
			errs = append(errs, atFile(f.Path, err))
			continue
		}
		raw[f.Path] = f.Data
		out[m.i] = sources.File{Path: f.Path, Data: data}
	}
	if len(errs) > 0 {
		return nil, manifest.SortErrors(errs)
	}
	opts.EncryptedUnknown = true
	opts.Rewritten = rewritten(opts.Rewritten, maps.Keys(raw))
	set, err := l.Load(out, opts)
	if err != nil {
		return nil, err
	}
	if check != nil {
		if err := check(set); err != nil {
			return nil, err
		}
	}
	for i := range set.Resources {
		r := &set.Resources[i]
		data, ok := raw[r.File]
		if !ok {
			continue
		}
		// As Redact records them, so that a file the pull request leaves alone compares
		// equal to what was applied from it.
		r.SpecHash, r.Sealed = manifest.HashJSON(r.Spec), string(data)
		r.MetaHash = manifest.HashJSON([]byte(r.MetaHash + "\x00sealed\x00" + manifest.HashJSON(data)))
	}
	return set, nil
}

// appliedKey names d's resource for applied: kinds lowercase, as identity compares them.
func appliedKey(d *Doc) manifest.ResourceKey {
	ns := d.Namespace
	if ns == "" {
		ns = "default"
	}
	return manifest.ResourceKey{Namespace: ns, Kind: strings.ToLower(d.Kind), Name: d.Name}
}

// parseSealed reads an encrypted file's structure and ciphertexts, without a key.
func parseSealed(file string, data []byte) (tree sops.Tree, docs []*Doc, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = problem(1, "SOPS: the file could not be read")
		}
	}()
	lines := lineIndex(data)
	tree, err = storeFor(file).LoadEncryptedFile(data)
	if err != nil {
		return tree, nil, problem(1, "SOPS: %s", cleanSOPS(err))
	}
	for _, branch := range tree.Branches {
		d := &Doc{}
		if err := collect(branch, nil, d, lines); err != nil {
			return tree, nil, err
		}
		if len(d.Fields) > 0 {
			d.Kind, _ = lookup(branch, "kind").(string)
			if d.Kind == "ResourceType" {
				return tree, nil, problem(d.Fields[0].Line, "a ResourceType cannot hold encrypted values")
			}
			d.Name, _ = lookup(branch, "metadata", "name").(string)
			d.Namespace, _ = lookup(branch, "metadata", "namespace").(string)
		}
		docs = append(docs, d)
	}
	return tree, docs, nil
}

// appliedMarkers maps the ciphertexts of d's fields that the applied file holds at the same
// place to the markers the applied spec has there.
func appliedMarkers(a Applied, file string, d *Doc) map[string]string {
	if a.Sealed == "" || len(a.Spec) == 0 {
		return nil
	}
	_, docs, err := parseSealed(file, []byte(a.Sealed))
	if err != nil {
		return nil
	}
	var spec any
	if json.Unmarshal(a.Spec, &spec) != nil {
		return nil
	}
	byPath := map[string]string{}
	for _, od := range docs {
		if Identity(od.Kind, od.Namespace, od.Name) != Identity(d.Kind, d.Namespace, d.Name) {
			continue
		}
		for _, f := range od.Fields {
			byPath[Pointer(f.Path)] = f.cipher
		}
	}
	out := map[string]string{}
	for _, f := range d.Fields {
		if byPath[Pointer(f.Path)] != f.cipher {
			continue
		}
		v := spec
		for _, step := range f.Path {
			v = child(v, step)
		}
		if s, ok := v.(string); ok && strings.HasPrefix(s, MarkerPrefix) {
			out[f.cipher] = s
		}
	}
	return out
}

// maskedPlain writes the file the loader reads: each ciphertext replaced by its field's
// marker (Field.Value), the sops metadata left out.
func maskedPlain(file string, data []byte, tree sops.Tree, fields []Field) ([]byte, error) {
	if !storeIsJSON(file) {
		return substitute(data, fields)
	}
	markers := make(map[string]string, len(fields))
	for _, f := range fields {
		markers[f.cipher] = f.Value.(string)
	}
	for _, b := range tree.Branches {
		replaceCiphers(b, markers)
	}
	out, err := storeFor(file).EmitPlainFile(tree.Branches)
	if err != nil {
		return nil, errors.New("SOPS: the masked file could not be written out")
	}
	return out, nil
}

func replaceCiphers(v any, markers map[string]string) any {
	switch x := v.(type) {
	case sops.TreeBranch:
		for i := range x {
			x[i].Value = replaceCiphers(x[i].Value, markers)
		}
	case []any:
		for i := range x {
			x[i] = replaceCiphers(x[i], markers)
		}
	case string:
		if m, ok := markers[x]; ok {
			return m
		}
	}
	return v
}
