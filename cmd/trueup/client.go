package main

import (
	"fmt"
	"strings"

	"github.com/trueup-dev/trueup/internal/apiclient"
)

// apiOptions are the flags every API command shares (the persistent --server and --token).
type apiOptions struct {
	server string
	token  string
	// serverChanged reports whether --server was given (else the context file may say).
	serverChanged func() bool
}

// serverDefault is the --server default: TRUEUP_SERVER, else the local controller.
func serverDefault() string {
	if v := getenv("TRUEUP_SERVER"); v != "" {
		return v
	}
	return apiclient.DefaultServer
}

// client is the API client of a command, with the server and token its flags, the
// environment or the context file name (credentials).
func (o *apiOptions) client() (*apiclient.Client, error) {
	server, token, insecure, err := o.credentials()
	if err != nil {
		return nil, err
	}
	return apiclient.New(server, token, insecure, "trueup-cli/"+version)
}

// forResource is the start of a command about one resource: KIND/NAME parsed, and the API
// client.
func (o *apiOptions) forResource(ref string) (c *apiclient.Client, kind, name string, err error) {
	if kind, name, err = parseObjectRef(ref); err != nil {
		return nil, "", "", err
	}
	c, err = o.client()
	return c, kind, name, err
}

// parseObjectRef splits KIND/NAME; the kind is case-insensitive on the server.
func parseObjectRef(s string) (kind, name string, err error) {
	kind, name, ok := strings.Cut(s, "/")
	if !ok || kind == "" || name == "" || strings.Contains(name, "/") {
		return "", "", fmt.Errorf("%q: want KIND/NAME, e.g. DatabaseCluster/orders-pg", s)
	}
	return kind, name, nil
}
