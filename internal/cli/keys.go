package cli

import (
	"fmt"
	"os"

	"github.com/trueup-dev/trueup/internal/sealed"
)

// EnvKeys are the age identities of SOPS_AGE_KEY and SOPS_AGE_KEY_FILE (the variables sops
// itself reads), which `trueup diff` and `trueup validate` decrypt with.
func EnvKeys() (*sealed.Keys, error) {
	var all []*sealed.Keys
	if v := os.Getenv("SOPS_AGE_KEY"); v != "" {
		k, err := sealed.ParseAgeKeys(v)
		if err != nil {
			return nil, fmt.Errorf("SOPS_AGE_KEY: %w", err)
		}
		all = append(all, k)
	}
	if p := os.Getenv("SOPS_AGE_KEY_FILE"); p != "" {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("SOPS_AGE_KEY_FILE: %w", err)
		}
		k, err := sealed.ParseAgeKeys(string(b))
		if err != nil {
			return nil, fmt.Errorf("SOPS_AGE_KEY_FILE %s: %w", p, err)
		}
		all = append(all, k)
	}
	return sealed.Merge(all...), nil
}
