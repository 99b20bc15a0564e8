package main

import (
	"os"

	"github.com/trueup-dev/trueup/internal/cli"
	"github.com/trueup-dev/trueup/internal/config"
	"github.com/trueup-dev/trueup/internal/daemon"
	"github.com/trueup-dev/trueup/internal/sealed"
)

func getenv(k string) string { return os.Getenv(k) }

func loadConfig(path string) (*config.Config, error) {
	return config.Load(path, getenv)
}

// cliKeys are the age identities `trueup validate` decrypts with: the environment's
// (cli.EnvKeys), and, with --config, every source's.
func cliKeys(cfg *config.Config) (*sealed.Keys, error) {
	env, err := cli.EnvKeys()
	if err != nil {
		return nil, err
	}
	all := []*sealed.Keys{env}
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
