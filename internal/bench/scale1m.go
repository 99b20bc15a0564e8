package main

import (
	"context"
	"errors"
)

// scale1mEnv is what the scale1m group's set-up hands to the read measurements once a million
// resources are synced: the API's URL and a token that reads everything.
type scale1mEnv struct {
	apiURL string
	token  string
}

// scale1mFigures runs the scale1m group (issue 26): a million resources in 2,000 files on a
// durable cluster. It runs only when named: go run ./internal/bench -only scale1m.
func (b *bench) scale1mFigures(ctx context.Context) error {
	return errors.New("scale1m: not built yet")
}
