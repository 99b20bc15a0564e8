package ocisource

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
)

// dockerConfig is the part of a docker config.json read: the auths entries. Credential
// helpers and stores (credHelpers, credsStore) would run programs and are not read.
type dockerConfig struct {
	Auths map[string]authn.AuthConfig `json:"auths"`
}

// authFromFile returns the credentials of a docker config file for registry (host[:port]);
// anonymous when the file has no entry for it.
func authFromFile(file, registry string) (authn.Authenticator, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("secretRef: %w", err)
	}
	var cfg dockerConfig
	if err := json.Unmarshal(data, &cfg); err != nil {
		// Not quoted: the file holds secrets.
		return nil, fmt.Errorf("secretRef: %s is not a docker config.json (%T)", file, err)
	}
	for key, ac := range cfg.Auths {
		if authKey(key) == registry || authKey(key) == "docker.io" && registry == "index.docker.io" {
			if ac == (authn.AuthConfig{}) {
				break
			}
			return authn.FromConfig(ac), nil
		}
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
