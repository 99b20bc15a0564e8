package sealed_test

import (
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/sealed"
	"github.com/trueup-dev/trueup/internal/sealed/sealedtest"
	"github.com/trueup-dev/trueup/sources"
)

// LoadMasked holds no key: the set has markers where the values are encrypted, the applied
// marker where the ciphertext is the applied one, and a marker of its own elsewhere; a
// schema the plaintext would fail (port is an integer) says nothing about a marker.
func TestLoadMasked(t *testing.T) {
	t.Parallel()
	identity, recipient := sealedtest.Key()
	keys, err := sealed.ParseAgeKeys(identity)
	if err != nil {
		t.Fatal(err)
	}
	const plain = "apiVersion: example.com/v1\nkind: Database\nmetadata: {name: orders, namespace: prod}\nspec:\n  password: s3cr3t-Passw0rd\n  port: 5432\n"
	for _, file := range []string{"db.yaml", "db.json"} {
		t.Run(file, func(t *testing.T) {
			t.Parallel()
			doc := []byte(plain)
			if strings.HasSuffix(file, ".json") {
				doc = []byte(`{"apiVersion": "example.com/v1", "kind": "Database", "metadata": {"name": "orders", "namespace": "prod"}, "spec": {"password": "s3cr3t-Passw0rd", "port": 5432}}`)
			}
			enc, err := sealedtest.Encrypt(file, doc, "^(password|port)$", recipient)
			if err != nil {
				t.Fatal(err)
			}
			files := []sources.File{{Path: "types.yaml", Data: []byte(typeDoc)}, {Path: file, Data: enc}}
			applied, err := sealed.Load(manifest.NewLoader(), sealed.NewOpener(keys), files, manifest.Options{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			a := applied.Resources[0]
			lookups := 0
			prev := func(ks []manifest.ResourceKey) (map[manifest.ResourceKey]sealed.Applied, error) {
				lookups++
				if len(ks) != 1 || ks[0] != (manifest.ResourceKey{Namespace: "prod", Kind: "database", Name: "orders"}) {
					t.Errorf("asked for %v", ks)
				}
				return map[manifest.ResourceKey]sealed.Applied{ks[0]: {Spec: a.Spec, Sealed: a.Sealed}}, nil
			}
			set, err := sealed.LoadMasked(manifest.NewLoader(), files, manifest.Options{}, prev, nil)
			if err != nil {
				t.Fatal(err)
			}
			r := set.Resources[0]
			if lookups != 1 || string(r.Spec) != string(a.Spec) || r.SpecHash != a.SpecHash || r.MetaHash != a.MetaHash {
				t.Errorf("unchanged file: spec %s hash %s meta %s, applied %s %s %s", r.Spec, r.SpecHash, r.MetaHash, a.Spec, a.SpecHash, a.MetaHash)
			}
			// Encrypted again (another ciphertext): markers of its own, never the plaintext.
			enc2, err := sealedtest.Encrypt(file, doc, "^(password|port)$", recipient)
			if err != nil {
				t.Fatal(err)
			}
			set, err = sealed.LoadMasked(manifest.NewLoader(), []sources.File{files[0], {Path: file, Data: enc2}}, manifest.Options{}, prev, nil)
			if err != nil {
				t.Fatal(err)
			}
			r = set.Resources[0]
			if r.SpecHash == a.SpecHash || strings.Contains(string(r.Spec), "s3cr3t") || strings.Contains(string(r.Spec), "5432") ||
				strings.Count(string(r.Spec), sealed.MarkerPrefix) != 2 {
				t.Errorf("re-encrypted file: spec %s", r.Spec)
			}
		})
	}
}
