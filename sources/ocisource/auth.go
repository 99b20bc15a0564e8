package ocisource

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
)

// dockerConfig is the part of a docker config.json read: the auths entries. Credential
// helpers and stores (credHelpers, credsStore) would run programs and are not read; a file
// that names them is warned about.
type dockerConfig struct {
	Auths       map[string]authn.AuthConfig `json:"auths"`
	CredsStore  string                      `json:"credsStore"`
	CredHelpers map[string]string           `json:"credHelpers"`
}

// authFromFile returns the credentials of a docker config file for registry (host[:port]);
// anonymous when the file has no entry for it, with a warning when the file names a
// credential store or helper (not run). Of several keys naming the registry ("ghcr.io",
// "https://ghcr.io/v1/"), the one equal to it wins, else the first in sorted order.
func authFromFile(file, registry string, logger *slog.Logger) (authn.Authenticator, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("secretRef: %w", err)
	}
	var cfg dockerConfig
	if err := json.Unmarshal(data, &cfg); err != nil {
		// Not quoted: the file holds secrets.
		return nil, fmt.Errorf("secretRef: %s is not a docker config.json (%T)", file, err)
	}
	keys := make([]string, 0, len(cfg.Auths))
	for key := range cfg.Auths {
		if authKey(key) == registry || authKey(key) == "docker.io" && registry == "index.docker.io" {
			keys = append(keys, key)
		}
	}
	slices.SortFunc(keys, func(a, b string) int {
		if (a == registry) != (b == registry) {
			if a == registry {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	if len(keys) > 0 && cfg.Auths[keys[0]] != (authn.AuthConfig{}) {
		return authn.FromConfig(cfg.Auths[keys[0]]), nil
	}
	if len(keys) == 0 && (cfg.CredsStore != "" || len(cfg.CredHelpers) > 0) {
		logger.Warn("secretRef: the docker config has no auths entry for the registry, and its credsStore and credHelpers are not run: pulls are anonymous",
			"file", file, "registry", registry)
	}
	return authn.Anonymous, nil
}

// authKey reduces an auths key ("ghcr.io", "https://ghcr.io/v1/", "https://index.docker.io/v1/")
// to its host[:port], as docker does.
func authKey(key string) string {
	key = strings.TrimPrefix(strings.TrimPrefix(key, "https://"), "http://")
	key, _, _ = strings.Cut(key, "/")
	if key == "index.docker.io" || key == "registry-1.docker.io" {
		return "docker.io"
	}
	return key
}
