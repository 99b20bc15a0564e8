package daemon

import (
	"log/slog"

	"github.com/trueup-dev/trueup/internal/auth"
	"github.com/trueup-dev/trueup/internal/config"
	"github.com/trueup-dev/trueup/internal/server"
)

// withAuth fills the server options that say who may call: the authenticator of the
// auth: section, the sign-in routes, and TLS. Without an auth: section opts keep a nil
// Authenticate (anonymous admin), which serve allows only on loopback (config.CheckExposure).
func withAuth(opts server.Options, cfg *config.Config, logger *slog.Logger) (server.Options, error) {
	if t := cfg.Server.TLS; t != nil {
		opts.TLSCertFile, opts.TLSKeyFile = t.CertFile, t.KeyFile
	}
	if cfg.Auth == nil {
		return opts, nil
	}
	a, err := auth.New(cfg.Auth, cfg.Server.ExternalURL, logger.With("component", "auth"))
	if err != nil {
		return opts, err
	}
	opts.Authenticate = a.Authenticate
	opts.AuthRoutes = a.Routes()
	opts.LoginURL = a.LoginURL()
	opts.CSRFToken = a.CSRFToken
	return opts, nil
}
