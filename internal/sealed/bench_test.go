package sealed_test

import (
	"testing"

	"github.com/trueup-dev/trueup/internal/sealed"
	"github.com/trueup-dev/trueup/internal/sealed/sealedtest"
)

func BenchmarkOpen(b *testing.B) {
	id, rcpt := sealedtest.Key()
	keys, _ := sealed.ParseAgeKeys(id)
	enc, _ := sealedtest.Encrypt("f.yaml", []byte(plainDB), "^spec$", rcpt)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := sealed.Open("f.yaml", enc, keys); err != nil {
			b.Fatal(err)
		}
	}
}
