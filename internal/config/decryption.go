package config

import (
	"fmt"
	"os"
)

// Decryption holds the keys a source decrypts its SOPS-encrypted manifests with.
type Decryption struct {
	Age *AgeKeys `yaml:"age"` // required
}

// AgeKeys are age identities (AGE-SECRET-KEY-1… lines, as age-keygen writes them): from a
// file, or inline from a ${VAR}. Exactly one of keyFile and keys.
type AgeKeys struct {
	KeyFile string `yaml:"keyFile"` // relative to the config's folder; not readable by others (mode 600)
	Keys    string `yaml:"keys"`    // the identities themselves (normally a ${VAR})
}

func validateDecryption(at string, d *Decryption, bad func(string, ...any)) {
	if d.Age == nil {
		bad("%s: age is required (decryption: {age: {keyFile: …}})", at)
		return
	}
	switch {
	case d.Age.KeyFile == "" && d.Age.Keys == "":
		bad("%s.age: one of keyFile and keys is required", at)
	case d.Age.KeyFile != "" && d.Age.Keys != "":
		bad("%s.age: keyFile and keys are exclusive", at)
	}
}

// AgeKeyMaterial returns the source's age identities: the file's content or the inline
// value. A key file readable by others is refused, as ssh refuses such a private key.
func (c *Config) AgeKeyMaterial(s Source) (string, error) {
	if s.Decryption == nil || s.Decryption.Age == nil {
		return "", nil
	}
	a := s.Decryption.Age
	if a.Keys != "" {
		return a.Keys, nil
	}
	p := c.Path(a.KeyFile)
	st, err := os.Stat(p)
	if err != nil {
		return "", fmt.Errorf("decryption.age.keyFile: %w", err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("decryption.age.keyFile: %s is readable by others (mode %04o); chmod 600 it (a Kubernetes secret volume: defaultMode: 0400)", p, st.Mode().Perm())
	}
	if st.Size() > 1<<20 {
		return "", fmt.Errorf("decryption.age.keyFile: %s is larger than 1 MiB", p)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return "", fmt.Errorf("decryption.age.keyFile: %w", err)
	}
	return string(b), nil
}
