package sealed_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/internal/sealed"
	"github.com/trueup-dev/trueup/internal/sealed/sealedtest"
)

// FuzzOpen feeds the SOPS path arbitrary file contents, seeded with real encrypted files:
// Open must return a plaintext or an error, never panic or quote the key.
func FuzzOpen(f *testing.F) {
	id, rcpt := sealedtest.Key()
	keys, err := sealed.ParseAgeKeys(id)
	if err != nil {
		f.Fatal(err)
	}
	for _, plain := range []string{plainDB, "a: 1\n", "spec: {x: [1, 2.5, true, null, s]}\n", "{\"spec\": {\"a\": \"b\"}}"} {
		file := "f.yaml"
		if strings.HasPrefix(plain, "{") {
			file = "f.json"
		}
		enc, err := sealedtest.Encrypt(file, []byte(plain), "^spec$", rcpt)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(file, enc)
		f.Add(file, bytes.Replace(enc, []byte("type:str"), []byte("type:int"), 1))
	}
	f.Add("f.yaml", []byte("sops:\n  mac: ENC[AES256_GCM,data:,iv:,tag:,type:str]\n"))
	f.Fuzz(func(t *testing.T, file string, data []byte) {
		if len(data) > 1<<16 {
			return
		}
		if !strings.HasSuffix(file, ".json") {
			file = "f.yaml"
		}
		o, err := sealed.Open(file, data, keys)
		if err != nil {
			if strings.Contains(err.Error(), "AGE-SECRET-KEY") {
				t.Fatalf("error quotes the key: %v", err)
			}
			return
		}
		if o.Plain == nil {
			t.Fatal("opened without a plaintext")
		}
	})
}
