package main

import (
	"os"

	"github.com/trueup-dev/trueup/internal/config"
)

func getenv(k string) string { return os.Getenv(k) }

func loadConfig(path string) (*config.Config, error) {
	return config.Load(path, getenv)
}
