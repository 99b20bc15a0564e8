package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"
)

// cliContext is the CLI's context file, $XDG_CONFIG_HOME/trueup/config.yaml (default
// ~/.config/trueup/config.yaml): where the API is and the token to call it with, so that
// neither has to be typed or kept in the environment.
//
//	server: https://trueup.example.com
//	token: tu_...
type cliContext struct {
	Server string `json:"server"`
	Token  string `json:"token"`
	// Insecure allows the token over http:// to another machine (internal/plaintext).
	Insecure bool `json:"insecure"`
}

// contextPath is where the context file is; "" when there is no home to look in.
func contextPath() string {
	dir := getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "trueup", "config.yaml")
}

// loadContext reads the context file; a missing file is an empty context. A file that
// others may read is refused: it holds a credential.
func loadContext() (cliContext, error) {
	var c cliContext
	path := contextPath()
	if path == "" {
		return c, nil
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return c, err
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return c, fmt.Errorf("%s holds a token and is readable by others (mode %04o): run chmod 600 %s", path, perm, path)
	}
	b, err := io.ReadAll(io.LimitReader(f, 64<<10))
	if err != nil {
		return c, fmt.Errorf("read %s: %w", path, err)
	}
	if err := yaml.UnmarshalStrict(b, &c); err != nil {
		return c, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// credentials decides the server and token of an API command: --server, then TRUEUP_SERVER,
// then the context file's server; --token, then TRUEUP_TOKEN, then the context file's token,
// which only goes to the context file's server. The token is never a flag default, so that
// --help cannot print it.
func (o *apiOptions) credentials() (server, token string, insecure bool, err error) {
	server, token = o.server, o.token
	if token == "" {
		token = getenv("TRUEUP_TOKEN")
	}
	explicit := getenv("TRUEUP_SERVER") != "" || (o.serverChanged != nil && o.serverChanged())
	ctx, err := loadContext()
	if err != nil {
		return "", "", false, err
	}
	if !explicit && ctx.Server != "" {
		server = ctx.Server
	}
	if token == "" && (!explicit || strings.TrimSuffix(server, "/") == strings.TrimSuffix(ctx.Server, "/")) {
		token = ctx.Token
	}
	return server, strings.TrimSpace(token), ctx.Insecure, nil
}
