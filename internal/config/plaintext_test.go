package config

import (
	"strings"
	"testing"
)

// TestPlaintextCredentials: every endpoint of the controller config that carries a credential
// refuses http:// to another machine, naming the field and the fix, and accepts it with
// insecure: true beside it. Loopback needs no insecure (internal/plaintext).
func TestPlaintextCredentials(t *testing.T) {
	t.Parallel()
	const app = "appID: 1, installationID: 2, privateKeyFile: k.pem"
	src := func(git string) string { return "sources:\n  - name: a\n    git: {" + git + "}\n" }
	status := func(cs string) string {
		return "sources:\n  - name: a\n    dir: {path: x}\n    commitStatus: {provider: gitlab, token: tok, repo: g/p, " + cs + "}\n"
	}
	tests := []struct{ name, yaml, want string }{ // want "": accepted
		{"git password over http", src(`url: "http://git.example.com/r.git", auth: {username: bot, password: pw}`),
			"sources[0].git.url: http:// would send the credentials unencrypted to git.example.com"},
		{"git credentials in the url over http", src(`url: "http://bot:pw@git.example.com/r.git"`),
			"sources[0].git.url: http:// would send the credentials"},
		{"git github app over http", src(`url: "http://git.example.com/r.git", auth: {githubApp: {` + app + `}}`),
			"sources[0].git.url: http:// would send the App's installation tokens"},
		{"git password over http, insecure", src(`url: "http://git.example.com/r.git", insecure: true, auth: {username: bot, password: pw}`), ""},
		{"git github app over http, insecure", src(`url: "http://git.example.com/r.git", insecure: true, auth: {githubApp: {` + app + `}}`), ""},
		{"git password over http to loopback", src(`url: "http://127.0.0.1:3000/r.git", auth: {username: bot, password: pw}`), ""},
		{"git over http without credentials", src(`url: "http://git.example.com/r.git"`), ""},
		{"git password over https", src(`url: "https://git.example.com/r.git", auth: {username: bot, password: pw}`), ""},
		{"github app baseURL over http", src(`url: "https://ghe.example.com/r.git", auth: {githubApp: {` + app + `, baseURL: "http://ghe.example.com/api/v3/"}}`),
			"sources[0].git.auth.githubApp.baseURL: http:// would send the App's signed token unencrypted to ghe.example.com"},
		{"github app baseURL over http, insecure", src(`url: "https://ghe.example.com/r.git", auth: {githubApp: {` + app + `, baseURL: "http://ghe.example.com/api/v3/", insecure: true}}`), ""},
		{"commit status over http", status(`baseURL: "http://gitlab.example.com/"`),
			"sources[0].commitStatus.baseURL: http:// would send the token unencrypted to gitlab.example.com"},
		{"commit status over http, insecure", status(`baseURL: "http://gitlab.example.com/", insecure: true`), ""},
		{"commit status over http to localhost", status(`baseURL: "http://localhost:8929/"`), ""},
	}
	checkParse(t, tests, func(t *testing.T, err error) {
		if !strings.Contains(err.Error(), "set insecure: true") {
			t.Errorf("error %v does not say how to allow it", err)
		}
	})
}
