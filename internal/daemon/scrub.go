package daemon

import (
	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/config"
	"github.com/trueup-dev/trueup/internal/redact"
)

// Redactor returns a registry of every secret the config took from the environment and every
// literal secret an action instance holds (actions.SecretHolder).
func Redactor(cfg *config.Config, acts map[string]actions.Action) *redact.Registry {
	return redact.New(secretsOf(cfg, acts)...)
}

// secretsOf lists the secrets of cfg and acts.
func secretsOf(cfg *config.Config, acts map[string]actions.Action) []string {
	secrets := cfg.Secrets()
	for _, a := range acts {
		if h, ok := a.(actions.SecretHolder); ok {
			secrets = append(secrets, h.Secrets()...)
		}
	}
	return secrets
}
