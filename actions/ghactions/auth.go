package ghactions

import (
	"context"

	"github.com/trueup-dev/trueup/internal/forge/githubapi"
)

// appTokens yields the installation tokens of a GitHub App (cached and renewed by
// githubapi.App) and registers each for scrubbing before it is used.
type appTokens struct {
	src     *githubapi.App
	secrets *secrets
}

func (t *appTokens) Token(ctx context.Context) (string, error) {
	tok, err := t.src.Token(ctx)
	if err != nil {
		return "", err
	}
	t.secrets.addRecent(tok)
	return tok, nil
}
