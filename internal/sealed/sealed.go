// Package sealed opens SOPS-encrypted manifests (DESIGN §4, Secrets in manifests). It uses the SOPS project's own
// packages for the format (stores, data key, cipher, MAC) and supplies only the keys: age
// identities named in the controller config, handed to SOPS through a key service of our own
// instead of the process-wide SOPS_AGE_KEY* variables, so that each source decrypts with its
// own keys.
//
// What trueup keeps of an encrypted field is a marker, never the plaintext:
//
//	password: "*** sops:1f2e3d4c5b6a7988"
//
// The hex part is an HMAC of the field's plaintext keyed by the file's SOPS data key: it
// changes when the value changes (so spec hashes, generations and `trueup diff` see the
// change) and tells nothing about the value to whoever lacks the key. The encrypted file is
// kept once per file (sealed_files, named by resources.sealed_sha); the plaintext is recovered in memory when an
// action is called (Reveal), and scrubbed from everything the action returns.
package sealed

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/getsops/sops/v3"
	"github.com/getsops/sops/v3/aes"
	sopsage "github.com/getsops/sops/v3/age"
	sopsconfig "github.com/getsops/sops/v3/config"
	"github.com/getsops/sops/v3/keyservice"
	sopsjson "github.com/getsops/sops/v3/stores/json"
	sopsyaml "github.com/getsops/sops/v3/stores/yaml"
	"google.golang.org/grpc"

	"github.com/trueup-dev/trueup/internal/manifest"
)

// MarkerPrefix starts the value stored in place of an encrypted field.
const MarkerPrefix = manifest.EncryptedMarkerPrefix

// Keys are the identities one source decrypts with.
type Keys struct {
	age sopsage.ParsedIdentities
}

// ParseAgeKeys reads age identities (AGE-SECRET-KEY-1… lines; blank lines and # comments
// ignored), as written by age-keygen. The error never quotes the key material.
func ParseAgeKeys(text string) (*Keys, error) {
	var ids sopsage.ParsedIdentities
	if err := ids.Import(text); err != nil {
		return nil, errors.New("age keys: not a valid age identity file (expected AGE-SECRET-KEY-1… lines)")
	}
	if len(ids) == 0 {
		return nil, errors.New("age keys: no identity found")
	}
	return &Keys{age: ids}, nil
}

// IsEncrypted reports whether data looks like a SOPS-encrypted YAML or JSON file: a value in
// SOPS's ciphertext form and a top-level sops entry. It is a cheap test on bytes; Open checks
// for real.
func IsEncrypted(data []byte) bool {
	return bytes.Contains(data, []byte("ENC[AES256_GCM,")) &&
		(bytes.HasPrefix(data, []byte("sops:")) || bytes.Contains(data, []byte("\nsops:")) || bytes.Contains(data, []byte(`"sops"`)))
}

// Field is one encrypted value of a resource's spec.
type Field struct {
	Path   []any  // under spec: string keys and int indexes
	Line   int    // in the encrypted file
	Value  any    // the plaintext as a JSON value (string, json.Number, bool)
	Digest string // keyed fingerprint of Value, see the package comment
	cipher string // the ENC[…] text in the file
}

// Doc is what one document of an opened file holds encrypted.
type Doc struct {
	Kind, Namespace, Name string
	Line                  int
	Fields                []Field
}

// Opened is a decrypted file.
type Opened struct {
	Plain []byte          // the plaintext file, for the loader; never stored
	Docs  map[string]*Doc // by Identity(kind, namespace, name)
}

// Identity names a resource the way Opened.Docs is keyed.
func Identity(kind, namespace, name string) string {
	if namespace == "" {
		namespace = "default"
	}
	return strings.ToLower(kind) + "/" + namespace + "/" + name
}

// Problem is a reason a file cannot be used, at a line of the file when known.
type Problem struct {
	Line int
	Msg  string
}

func (p *Problem) Error() string { return p.Msg }

func problem(line int, format string, args ...any) error {
	return &Problem{Line: line, Msg: fmt.Sprintf(format, args...)}
}

type store interface {
	LoadEncryptedFile(in []byte) (sops.Tree, error)
	EmitPlainFile(sops.TreeBranches) ([]byte, error)
}

func storeIsJSON(file string) bool { return strings.EqualFold(path.Ext(file), ".json") }

func storeFor(file string) store {
	if storeIsJSON(file) {
		return sopsjson.NewStore(&sopsconfig.JSONStoreConfig{})
	}
	return sopsyaml.NewStore(&sopsconfig.YAMLStoreConfig{})
}

// Open decrypts an encrypted manifest file named file (its extension chooses YAML or JSON).
// Only values under a resource's spec may be encrypted: identity, labels and annotations
// are stored and shown as they are, and a ResourceType is never a secret.
//
// Once the data key is decrypted, no text of the SOPS library reaches an error: a value whose
// type tag was altered makes the library quote the plaintext it could not convert (the tag is
// not authenticated), and errors are stored, shown and posted to the forge.
func Open(file string, data []byte, keys *Keys) (o *Opened, err error) {
	defer func() {
		// The file comes from the repository: a parser fault on a crafted file must reject
		// that file, not stop the controller; the fault's text is not quoted (it may hold a
		// decrypted value).
		if r := recover(); r != nil {
			o, err = nil, problem(1, "SOPS: the file could not be read")
		}
	}()
	lines := lineIndex(data)
	if keys == nil {
		return nil, problem(1, "the file is encrypted with SOPS, but the source has no decryption keys (decryption: {age: {keyFile: …}} in the controller config)")
	}
	st := storeFor(file)
	tree, err := st.LoadEncryptedFile(data)
	if err != nil {
		return nil, problem(1, "SOPS: %s", cleanSOPS(err)) // before any key is used: no plaintext yet
	}
	docs := make([]*Doc, len(tree.Branches))
	for i, branch := range tree.Branches {
		d := &Doc{}
		if err := collect(branch, nil, d, lines); err != nil {
			return nil, err
		}
		docs[i] = d
	}
	key, err := tree.Metadata.GetDataKeyWithKeyServices([]keyservice.KeyServiceClient{keys.client()}, nil)
	if err != nil {
		return nil, problem(1, "SOPS: cannot decrypt the data key with the source's age keys (recipients: %s)", recipients(tree.Metadata))
	}
	cipher := aes.NewCipher()
	mac, err := tree.Decrypt(key, cipher)
	if err != nil {
		return nil, problem(1, "SOPS: a value could not be decrypted (its type tag was altered, or the file was edited without sops)")
	}
	stored, err := cipher.Decrypt(tree.Metadata.MessageAuthenticationCode, key, tree.Metadata.LastModified.Format(time.RFC3339))
	if err != nil || stored != mac {
		return nil, problem(1, "SOPS: the file's MAC does not match its content (edited without sops?)")
	}
	mkey := markerKey(key)
	o = &Opened{Docs: map[string]*Doc{}}
	var all []Field
	for i, branch := range tree.Branches {
		d := docs[i]
		if len(d.Fields) == 0 {
			continue
		}
		kind, _ := lookup(branch, "kind").(string)
		if kind == "ResourceType" {
			return nil, problem(d.Fields[0].Line, "a ResourceType cannot hold encrypted values")
		}
		d.Kind = kind
		d.Name, _ = lookup(branch, "metadata", "name").(string)
		d.Namespace, _ = lookup(branch, "metadata", "namespace").(string)
		for j := range d.Fields {
			f := &d.Fields[j]
			v, err := jsonValue(lookup(branch, append([]any{"spec"}, f.Path...)...))
			if err != nil {
				return nil, problem(f.Line, "spec%s: %v", Pointer(f.Path), err)
			}
			f.Value = v
			f.Digest = digest(mkey, f.Path, v)
		}
		all = append(all, d.Fields...)
		id := Identity(d.Kind, d.Namespace, d.Name)
		if _, dup := o.Docs[id]; dup {
			return nil, problem(d.Fields[0].Line, "%s appears twice in the file", id)
		}
		o.Docs[id] = d
	}
	if storeIsJSON(file) {
		// JSON has no comments and one value per token; SOPS's own emitter is exact enough.
		if o.Plain, err = st.EmitPlainFile(tree.Branches); err != nil {
			return nil, problem(1, "SOPS: the decrypted file could not be written out")
		}
	} else if o.Plain, err = substitute(data, all); err != nil {
		return nil, err
	}
	return o, nil
}

// collect records the encrypted leaves of one document, refusing those outside spec.
// Comments are elements of SOPS's lists: they are skipped and do not count as indexes, so
// that a path is the loader's path.
func collect(v any, at []any, d *Doc, lines map[string]int) error {
	switch x := v.(type) {
	case sops.TreeBranch:
		for _, item := range x {
			k, ok := item.Key.(string)
			if !ok {
				continue // a comment
			}
			if err := collect(item.Value, append(at[:len(at):len(at)], k), d, lines); err != nil {
				return err
			}
		}
	case []any:
		i := 0
		for _, e := range x {
			if _, comment := e.(sops.Comment); comment {
				continue
			}
			if err := collect(e, append(at[:len(at):len(at)], i), d, lines); err != nil {
				return err
			}
			i++
		}
	case string:
		if !strings.HasPrefix(x, "ENC[") {
			return nil
		}
		line := lines[x]
		if len(at) < 2 || at[0] != "spec" {
			return problem(line, "%s: only values under spec may be encrypted (encrypted_regex: ^spec$ in .sops.yaml encrypts just those)", dotted(at))
		}
		d.Fields = append(d.Fields, Field{Path: at[1:], Line: line, cipher: x})
	}
	return nil
}

// lookup follows keys and indexes from a document's root.
func lookup(v any, at ...any) any {
	for _, step := range at {
		switch k := step.(type) {
		case string:
			b, ok := v.(sops.TreeBranch)
			if !ok {
				return nil
			}
			var next any
			for _, item := range b {
				if item.Key == k {
					next = item.Value
					break
				}
			}
			v = next
		case int:
			a, ok := v.([]any)
			if !ok {
				return nil
			}
			v = nil
			i := 0
			for _, e := range a {
				if _, comment := e.(sops.Comment); comment {
					continue
				}
				if i == k {
					v = e
					break
				}
				i++
			}
		}
	}
	return v
}

// jsonValue turns a decrypted leaf into the JSON value a spec holds.
func jsonValue(v any) (any, error) {
	switch x := v.(type) {
	case string, bool:
		return x, nil
	case int:
		return json.Number(strconv.Itoa(x)), nil
	case int64:
		return json.Number(strconv.FormatInt(x, 10)), nil
	case uint64:
		return json.Number(strconv.FormatUint(x, 10)), nil
	case time.Time:
		return x.Format(time.RFC3339Nano), nil
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return nil, errors.New("the decrypted number cannot be represented in JSON")
		}
		return json.Number(strconv.FormatFloat(x, 'g', -1, 64)), nil
	}
	return nil, fmt.Errorf("decrypted to a value of type %T, which a spec cannot hold", v)
}

// markerKey derives the key markers are made with from the file's data key, so that the
// data key itself (also the AES-GCM key of every value) is used for nothing else.
func markerKey(dataKey []byte) []byte {
	m := hmac.New(sha256.New, dataKey)
	m.Write([]byte("trueup sops marker v1"))
	return m.Sum(nil)
}

func digest(key []byte, at []any, v any) string {
	m := hmac.New(sha256.New, key)
	b, _ := json.Marshal(at)
	m.Write(b)
	m.Write([]byte{0})
	b, _ = json.Marshal(v)
	m.Write(b)
	return hex.EncodeToString(m.Sum(nil)[:8])
}

// Marker is the stored stand-in for an encrypted field.
func (f Field) Marker() string { return MarkerPrefix + f.Digest }

// Pointer spells a path under spec the way validation errors do: .a.b[0].
func Pointer(at []any) string {
	var b strings.Builder
	for _, s := range at {
		switch k := s.(type) {
		case string:
			b.WriteByte('.')
			b.WriteString(k)
		case int:
			fmt.Fprintf(&b, "[%d]", k)
		}
	}
	return b.String()
}

func dotted(at []any) string {
	s := Pointer(at)
	return strings.TrimPrefix(s, ".")
}

// Values are the document's encrypted strings, for scrubbing. Numbers and booleans are left
// out: replacing every "5432" or "true" in what a plugin returns would garble its state and
// outputs and protect nothing (a substring scrubber cannot hide a number).
func (d *Doc) Values() []string {
	out := make([]string, 0, len(d.Fields))
	for _, f := range d.Fields {
		if s, ok := f.Value.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// lineIndex maps each ciphertext in the file to its line, for messages: ciphertexts are
// unique (random IVs), so a value names its place.
func lineIndex(data []byte) map[string]int {
	out := map[string]int{}
	line := 1
	for i := 0; i < len(data); {
		j := bytes.Index(data[i:], []byte("ENC[AES256_GCM,"))
		if j < 0 {
			break
		}
		line += bytes.Count(data[i:i+j], []byte{'\n'})
		start := i + j
		end := bytes.IndexByte(data[start:], ']')
		if end < 0 {
			break
		}
		out[string(data[start:start+end+1])] = line
		i = start + end + 1
	}
	return out
}

func recipients(m sops.Metadata) string {
	var out []string
	for _, g := range m.KeyGroups {
		for _, k := range g {
			out = append(out, k.TypeToIdentifier()+":"+k.ToString())
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

// cleanSOPS keeps SOPS's message to one line.
func cleanSOPS(err error) string {
	s := strings.Join(strings.Fields(err.Error()), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// client hands SOPS the data-key decryption: age keys with this source's identities, any
// other kind of master key refused (trueup configures no cloud KMS).
func (k *Keys) client() keyservice.KeyServiceClient { return ageService{ids: k.age} }

type ageService struct{ ids sopsage.ParsedIdentities }

func (s ageService) Encrypt(context.Context, *keyservice.EncryptRequest, ...grpc.CallOption) (*keyservice.EncryptResponse, error) {
	return nil, errors.New("trueup does not encrypt")
}

func (s ageService) Decrypt(_ context.Context, req *keyservice.DecryptRequest, _ ...grpc.CallOption) (*keyservice.DecryptResponse, error) {
	ak, ok := req.GetKey().GetKeyType().(*keyservice.Key_AgeKey)
	if !ok {
		return nil, errors.New("only age keys are configured")
	}
	mk := &sopsage.MasterKey{Recipient: ak.AgeKey.GetRecipient(), EncryptedKey: string(req.GetCiphertext())}
	s.ids.ApplyToMasterKey(mk)
	plain, err := mk.Decrypt()
	if err != nil {
		return nil, errors.New("no configured age identity matches")
	}
	return &keyservice.DecryptResponse{Plaintext: plain}, nil
}

// Merge returns keys holding every identity of ks (nil ones skipped), or nil when none.
func Merge(ks ...*Keys) *Keys {
	var ids sopsage.ParsedIdentities
	for _, k := range ks {
		if k != nil {
			ids = append(ids, k.age...)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	return &Keys{age: ids}
}

// substitute writes the plaintext of an encrypted YAML file for the loader, line for line:
// each ENC[…] value replaced in place by its value as a one-line JSON scalar (a valid YAML
// scalar of the same type), and the top-level sops metadata blanked out. Every line keeps its
// number, so the loader's problems point at the lines of the file in the repository, and
// comments stay where they are.
func substitute(data []byte, fields []Field) ([]byte, error) {
	out := append([]byte(nil), data...)
	for _, f := range fields {
		i := bytes.Index(out, []byte(f.cipher))
		if i < 0 {
			return nil, problem(f.Line, "spec%s: the encrypted value was not found in the file", Pointer(f.Path))
		}
		j := i + len(f.cipher)
		if i > 0 && j < len(out) && (out[i-1] == '"' || out[i-1] == '\'') && out[j] == out[i-1] {
			i, j = i-1, j+1 // a quoted ENC[…]: the quotes go too
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(f.Value); err != nil {
			return nil, problem(f.Line, "spec%s: the decrypted value cannot be written as JSON", Pointer(f.Path))
		}
		out = append(out[:i], append(bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), out[j:]...)...)
	}
	return blankMetadata(out), nil
}

// blankMetadata empties the lines of every top-level `sops:` entry (the key's line and the
// indented or empty lines after it), keeping their line breaks.
func blankMetadata(data []byte) []byte {
	lines := bytes.SplitAfter(data, []byte{'\n'})
	in := false
	for i, l := range lines {
		body := bytes.TrimRight(l, "\r\n")
		switch {
		case bytes.HasPrefix(body, []byte("sops:")):
			in = true
		case in && (len(body) == 0 || body[0] == ' ' || body[0] == '\t'):
		default:
			in = false
			continue
		}
		lines[i] = l[len(body):] // the line break only
	}
	return bytes.Join(lines, nil)
}
