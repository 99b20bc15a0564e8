package sealed_test

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/sealed"
	"github.com/trueup-dev/trueup/internal/sealed/sealedtest"
	"github.com/trueup-dev/trueup/sources"
)

const typeDoc = `apiVersion: trueup.dev/v1
kind: ResourceType
metadata: {name: Database}
spec:
  group: example.com
  versions:
    - name: v1
      schema:
        type: object
        required: [password]
        properties:
          password: {type: string, minLength: 8}
          port: {type: integer}
          users: {type: array, items: {type: object, properties: {name: {type: string}, token: {type: string}}}}
          size: {type: string, default: small}
  action: {name: noop}
`

const plainDB = `apiVersion: example.com/v1
kind: Database
metadata: {name: orders, namespace: prod, labels: {tier: gold}}
spec:
  password: s3cr3t-Passw0rd
  port: 5432
  users:
    - {name: app, token: tok-very-secret-1}
---
apiVersion: example.com/v1
kind: Database
metadata: {name: billing}
spec:
  password: another-Secret-9
`

func encrypt(t *testing.T, file, plain, regex string, recipients ...string) []byte {
	t.Helper()
	b, err := sealedtest.Encrypt(file, []byte(plain), regex, recipients...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func keys(t *testing.T, identity string) *sealed.Keys {
	t.Helper()
	k, err := sealed.ParseAgeKeys("# created: today\n" + identity + "\n")
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func load(t *testing.T, op *sealed.Opener, files ...sources.File) (*manifest.Set, *sealed.Revision, error) {
	t.Helper()
	rv, errs := op.Prepare(files)
	if len(errs) > 0 {
		return nil, rv, errs
	}
	set, err := manifest.NewLoader().Load(rv.Files, manifest.Options{CheckAction: func(string, json.RawMessage) error { return nil }})
	if err != nil {
		return nil, rv, rv.ScrubErrors(err.(manifest.Errors))
	}
	return set, rv, rv.Redact(set)
}

func TestOpenRedactReveal(t *testing.T) {
	id, rcpt := sealedtest.Key()
	enc := encrypt(t, "db.yaml", plainDB, "^spec$", rcpt)
	if !sealed.IsEncrypted(enc) || bytes.Contains(enc, []byte("s3cr3t")) {
		t.Fatalf("not encrypted:\n%s", enc)
	}
	op := sealed.NewOpener(keys(t, id))
	set, _, err := load(t, op, sources.File{Path: "types.yaml", Data: []byte(typeDoc)}, sources.File{Path: "db.yaml", Hash: "blob1", Data: enc})
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Resources) != 2 {
		t.Fatalf("resources: %+v", set.Resources)
	}
	var orders manifest.Resource
	for _, r := range set.Resources {
		if strings.Contains(string(r.Spec), "s3cr3t") || strings.Contains(string(r.Spec), "tok-very") || strings.Contains(string(r.Spec), "another-Secret") {
			t.Fatalf("plaintext in stored spec: %s", r.Spec)
		}
		if r.Sealed != string(enc) {
			t.Fatalf("%s: sealed file not kept", r.Name)
		}
		if r.Name == "orders" {
			orders = r
		}
	}
	var spec map[string]any
	if err := json.Unmarshal(orders.Spec, &spec); err != nil {
		t.Fatal(err)
	}
	if pw, _ := spec["password"].(string); !strings.HasPrefix(pw, sealed.MarkerPrefix) {
		t.Fatalf("password = %v", spec["password"])
	}
	if spec["size"] != "small" {
		t.Fatalf("schema default lost: %s", orders.Spec)
	}
	if orders.Labels["tier"] != "gold" {
		t.Fatalf("labels: %v", orders.Labels)
	}

	rev := sealed.NewRevealer(map[string]*sealed.Keys{"infra": keys(t, id)})
	plain, values, err := rev.Reveal("infra", orders.File, orders.Kind, orders.Namespace, orders.Name, orders.Sealed, orders.Spec)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"password":"s3cr3t-Passw0rd","port":5432,"size":"small","users":[{"name":"app","token":"tok-very-secret-1"}]}`
	if string(plain) != want {
		t.Fatalf("revealed %s\nwant     %s", plain, want)
	}
	joined := strings.Join(values, ",")
	for _, v := range []string{"s3cr3t-Passw0rd", "tok-very-secret-1", "app"} {
		if !strings.Contains(joined, v) {
			t.Fatalf("values %q miss %q", values, v)
		}
	}
	if strings.Contains(joined, "5432") {
		t.Fatalf("values %q hold a number: scrubbing it would garble state and outputs", values)
	}

	// Same plaintext encrypted again (new data key): markers change, as the key does; the
	// same file loaded twice gives the same markers.
	set2, _, err := load(t, op, sources.File{Path: "types.yaml", Data: []byte(typeDoc)}, sources.File{Path: "db.yaml", Hash: "blob1", Data: enc})
	if err != nil {
		t.Fatal(err)
	}
	for i := range set.Resources {
		if set.Resources[i].SpecHash != set2.Resources[i].SpecHash {
			t.Fatal("spec hash not stable across loads")
		}
	}

	// A changed value changes the marker of that field only.
	changed := strings.Replace(plainDB, "5432", "5433", 1)
	enc2 := encrypt(t, "db.yaml", changed, "^spec$", rcpt)
	set3, _, err := load(t, op, sources.File{Path: "types.yaml", Data: []byte(typeDoc)}, sources.File{Path: "db.yaml", Hash: "blob2", Data: enc2})
	if err != nil {
		t.Fatal(err)
	}
	if set3.Resources[1].SpecHash == orders.SpecHash {
		t.Fatal("changed encrypted value did not change the spec hash")
	}

	// A stored spec whose markers are not the file's is refused, not revealed wrongly.
	if _, _, err := rev.Reveal("infra", orders.File, orders.Kind, orders.Namespace, orders.Name, string(enc2), orders.Spec); err == nil {
		t.Fatal("mismatched markers revealed")
	}
	if _, _, err := rev.Reveal("other", orders.File, orders.Kind, orders.Namespace, orders.Name, "x"+orders.Sealed, orders.Spec); err == nil || !strings.Contains(err.Error(), "no decryption keys") {
		t.Fatalf("unknown source: %v", err)
	}
}

func TestJSONFile(t *testing.T) {
	id, rcpt := sealedtest.Key()
	plain := `{"apiVersion":"example.com/v1","kind":"Database","metadata":{"name":"j"},"spec":{"password":"json-Secret-77"}}`
	enc := encrypt(t, "db.json", plain, "^spec$", rcpt)
	set, _, err := load(t, sealed.NewOpener(keys(t, id)), sources.File{Path: "types.yaml", Data: []byte(typeDoc)}, sources.File{Path: "db.json", Data: enc})
	if err != nil {
		t.Fatal(err)
	}
	if r := set.Resources[0]; !strings.Contains(string(r.Spec), sealed.MarkerPrefix) || strings.Contains(string(r.Spec), "json-Secret") {
		t.Fatalf("spec %s", r.Spec)
	}
}

func TestRefused(t *testing.T) {
	id, rcpt := sealedtest.Key()
	otherID, _ := sealedtest.Key()
	enc := encrypt(t, "db.yaml", plainDB, "^spec$", rcpt)
	everything := encrypt(t, "db.yaml", plainDB, "", rcpt)
	typeEnc := encrypt(t, "t.yaml", strings.Replace(typeDoc, "minLength: 8", "minLength: 9", 1), "^spec$", rcpt)
	tampered := bytes.Replace(enc, []byte("mac: ENC[AES256_GCM,data:"), []byte("mac: ENC[AES256_GCM,data:A"), 1)
	short := encrypt(t, "db.yaml", strings.Replace(plainDB, "s3cr3t-Passw0rd", "short1", 1), "^spec$", rcpt)
	cases := []struct {
		name string
		keys *sealed.Keys
		data []byte
		want string
	}{
		{"no keys", nil, enc, "db.yaml:1: the file is encrypted with SOPS, but the source has no decryption keys"},
		{"wrong key", keys(t, otherID), enc, "db.yaml:1: SOPS: cannot decrypt the data key with the source's age keys (recipients: age:" + rcpt},
		{"metadata encrypted", keys(t, id), everything, ": apiVersion: only values under spec may be encrypted"},
		{"type encrypted", keys(t, id), typeEnc, "a ResourceType cannot hold encrypted values"},
		{"tampered", keys(t, id), tampered, "db.yaml:1: SOPS:"},
		// The schema error quotes nothing of the plaintext.
		{"schema error scrubbed", keys(t, id), short, "password: length must be >= 8"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := load(t, sealed.NewOpener(c.keys), sources.File{Path: "types.yaml", Data: []byte(typeDoc)}, sources.File{Path: "db.yaml", Data: c.data})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v\nwant %q", err, c.want)
			}
			for _, s := range []string{"s3cr3t", "short1", "tok-very", "AGE-SECRET"} {
				if strings.Contains(err.Error(), s) {
					t.Fatalf("error quotes %q: %v", s, err)
				}
			}
		})
	}
}

func TestParseAgeKeys(t *testing.T) {
	if _, err := sealed.ParseAgeKeys("AGE-SECRET-KEY-1NOTAKEY"); err == nil || strings.Contains(err.Error(), "NOTAKEY") {
		t.Fatalf("bad key: %v", err)
	}
	if _, err := sealed.ParseAgeKeys("# nothing\n"); err == nil {
		t.Fatal("empty key file accepted")
	}
}

// A value's type tag is not authenticated by SOPS: flipped, the library would quote the
// plaintext it cannot convert. Nothing of it may reach the error.
func TestTypeTagFlipLeaksNothing(t *testing.T) {
	id, rcpt := sealedtest.Key()
	const secret = "Sup3r-Secret-Value"
	enc := encrypt(t, "x.yaml", "apiVersion: example.com/v1\nkind: Database\nmetadata: {name: x}\nspec:\n  password: "+secret+"\n", "^spec$", rcpt)
	for _, typ := range []string{"int", "float", "bool", "time", "bytes"} {
		flipped := bytes.Replace(enc, []byte("type:str]"), []byte("type:"+typ+"]"), 1)
		_, err := sealed.Open("x.yaml", flipped, keys(t, id))
		if err == nil {
			t.Fatalf("type:%s accepted", typ)
		}
		if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "Sup3r") {
			t.Fatalf("type:%s: the error quotes the plaintext: %v", typ, err)
		}
	}
}

// SOPS keeps comments as elements of lists: indexes must still be the loader's, or a marker
// lands on the wrong element and a plaintext is stored.
func TestCommentsInLists(t *testing.T) {
	id, rcpt := sealedtest.Key()
	plain := `apiVersion: example.com/v1
kind: Database
metadata: {name: orders, namespace: prod}
spec:
  password: top-Secret-000
  users:
    # the admin
    - name: admin
      token: tok-admin-SECRET
    # and bob
    - name: bob
      token: tok-bob-SECRET
`
	enc := encrypt(t, "db.yaml", plain, "^token$", rcpt)
	set, _, err := load(t, sealed.NewOpener(keys(t, id)), sources.File{Path: "types.yaml", Data: []byte(typeDoc)}, sources.File{Path: "db.yaml", Data: enc})
	if err != nil {
		t.Fatal(err)
	}
	r := set.Resources[0]
	if strings.Contains(string(r.Spec), "tok-admin") || strings.Contains(string(r.Spec), "tok-bob") {
		t.Fatalf("plaintext stored: %s", r.Spec)
	}
	rev := sealed.NewRevealer(map[string]*sealed.Keys{"s": keys(t, id)})
	out, _, err := rev.Reveal("s", r.File, r.Kind, r.Namespace, r.Name, r.Sealed, r.Spec)
	if err != nil {
		t.Fatal(err)
	}
	want := `"users":[{"name":"admin","token":"tok-admin-SECRET"},{"name":"bob","token":"tok-bob-SECRET"}]`
	if !strings.Contains(string(out), want) {
		t.Fatalf("revealed %s\nwant %s", out, want)
	}
}

// Problems in an encrypted file point at the lines of the file in the repository, also after
// a multi-line encrypted value.
func TestLinesOfEncryptedFiles(t *testing.T) {
	id, rcpt := sealedtest.Key()
	plain := "apiVersion: example.com/v1\nkind: Database\nmetadata: {name: x}\nspec:\n  password: |\n    line one\n    line two\n    line three\n  port: not-a-number\n"
	enc := encrypt(t, "x.yaml", plain, "^password$", rcpt)
	lines := strings.Split(string(enc), "\n")
	want := 0
	for i, l := range lines {
		if strings.Contains(l, "port:") {
			want = i + 1
		}
	}
	_, _, err := load(t, sealed.NewOpener(keys(t, id)), sources.File{Path: "types.yaml", Data: []byte(typeDoc)}, sources.File{Path: "x.yaml", Data: enc})
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("x.yaml:%d: spec.port", want)) {
		t.Fatalf("err = %v, want x.yaml:%d: spec.port (file:\n%s)", err, want, enc)
	}
}

// Re-encrypting for new recipients (sops updatekeys) keeps every value and marker but changes
// the stored file: the metadata hash follows, so the store writes the new file.
func TestUpdateKeysChangesMetaHash(t *testing.T) {
	id1, r1 := sealedtest.Key()
	id2, r2 := sealedtest.Key()
	dataKey := make([]byte, 32)
	if _, err := rand.Read(dataKey); err != nil {
		t.Fatal(err)
	}
	one, err := sealedtest.EncryptWithKey("db.yaml", []byte(plainDB), "^spec$", dataKey, r1)
	if err != nil {
		t.Fatal(err)
	}
	both, err := sealedtest.EncryptWithKey("db.yaml", []byte(plainDB), "^spec$", dataKey, r1, r2)
	if err != nil {
		t.Fatal(err)
	}
	a, _, err := load(t, sealed.NewOpener(keys(t, id1)), sources.File{Path: "types.yaml", Data: []byte(typeDoc)}, sources.File{Path: "db.yaml", Data: one})
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := load(t, sealed.NewOpener(keys(t, id2)), sources.File{Path: "types.yaml", Data: []byte(typeDoc)}, sources.File{Path: "db.yaml", Data: both})
	if err != nil {
		t.Fatal(err)
	}
	for i := range a.Resources {
		if a.Resources[i].SpecHash != b.Resources[i].SpecHash {
			t.Fatal("same values, same data key: the spec hash must not change")
		}
		if a.Resources[i].MetaHash == b.Resources[i].MetaHash {
			t.Fatal("a new recipient must change the metadata hash, so that the stored file is rewritten")
		}
	}
	// The new file opens with the new key alone.
	rev := sealed.NewRevealer(map[string]*sealed.Keys{"s": keys(t, id2)})
	r := b.Resources[1]
	if _, _, err := rev.Reveal("s", r.File, r.Kind, r.Namespace, r.Name, r.Sealed, r.Spec); err != nil {
		t.Fatal(err)
	}
}
