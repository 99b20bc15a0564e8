package main

import (
	"fmt"
	"os"

	"github.com/trueup-dev/trueup/internal/config"
	"github.com/trueup-dev/trueup/internal/daemon"
	"github.com/trueup-dev/trueup/internal/sealed"
)

func getenv(k string) string { return os.Getenv(k) }

func loadConfig(path string) (*config.Config, error) {
	return config.Load(path, getenv)
}

// cliKeys are the age identities `trueup validate` and `trueup diff` decrypt with: those of
// SOPS_AGE_KEY and SOPS_AGE_KEY_FILE (the variables sops itself reads), and, with --config,
// every source's.
func cliKeys(cfg *config.Config) (*sealed.Keys, error) {
	var all []*sealed.Keys
	if v := getenv("SOPS_AGE_KEY"); v != "" {
		k, err := sealed.ParseAgeKeys(v)
		if err != nil {
			return nil, fmt.Errorf("SOPS_AGE_KEY: %w", err)
		}
		all = append(all, k)
	}
	if p := getenv("SOPS_AGE_KEY_FILE"); p != "" {
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
	if cfg != nil {
		byName, err := daemon.SourceKeys(cfg)
		if err != nil {
			return nil, err
		}
		for _, k := range byName {
			all = append(all, k)
		}
	}
	return sealed.Merge(all...), nil
}
