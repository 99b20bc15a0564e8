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
	tests := []struct {
		name, yaml string
		want       string
	}{
		{"git password over http", src(`url: "http://git.example.com/r.git", auth: {username: bot, password: pw}`),
			"sources[0].git.url: http:// would send the credentials unencrypted to git.example.com"},
		{"git credentials in the url over http", src(`url: "http://bot:pw@git.example.com/r.git"`),
			"sources[0].git.url: http:// would send the credentials"},
		{"git github app over http", src(`url: "http://git.example.com/r.git", auth: {githubApp: {` + app + `}}`),
			"sources[0].git.url: http:// would send the App's installation tokens"},
		{"git password over http, insecure", src(`url: "http://git.example.com/r.git", insecure: true, auth: {username: bot, password: pw}`), accepted},
		{"git github app over http, insecure", src(`url: "http://git.example.com/r.git", insecure: true, auth: {githubApp: {` + app + `}}`), accepted},
		{"git password over http to loopback", src(`url: "http://127.0.0.1:3000/r.git", auth: {username: bot, password: pw}`), accepted},
		{"git over http without credentials", src(`url: "http://git.example.com/r.git"`), accepted},
		{"git password over https", src(`url: "https://git.example.com/r.git", auth: {username: bot, password: pw}`), accepted},
		{"github app baseURL over http", src(`url: "https://ghe.example.com/r.git", auth: {githubApp: {` + app + `, baseURL: "http://ghe.example.com/api/v3/"}}`),
			"sources[0].git.auth.githubApp.baseURL: http:// would send the App's signed token unencrypted to ghe.example.com"},
		{"github app baseURL over http, insecure", src(`url: "https://ghe.example.com/r.git", auth: {githubApp: {` + app + `, baseURL: "http://ghe.example.com/api/v3/", insecure: true}}`), accepted},
		{"commit status over http", status(`baseURL: "http://gitlab.example.com/"`),
			"sources[0].commitStatus.baseURL: http:// would send the token unencrypted to gitlab.example.com"},
		{"commit status over http, insecure", status(`baseURL: "http://gitlab.example.com/", insecure: true`), accepted},
		{"commit status over http to localhost", status(`baseURL: "http://localhost:8929/"`), accepted},
	}
	checkParse(t, tests, "set insecure: true")
}

// TestCommitStatusBaseURL: a commitStatus baseURL that is not a plain http(s) API root is
// refused when the config is read, naming the field and quoting no credential, as the
// reporter would refuse it when it starts.
func TestCommitStatusBaseURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, baseURL, want string }{
		{"credentials", "https://bot:s3cret@gitlab.example.com/", "https://gitlab.example.com/ may not carry credentials"},
		{"query", "https://gitlab.example.com/?private_token=s3cret", "may not carry credentials, a query or a fragment"},
		{"fragment", "https://gitlab.example.com/#s3cret", "may not carry credentials, a query or a fragment"},
		{"no scheme", "gitlab.example.com/s3cret", "not an http(s) URL"},
		{"another scheme", "ftp://gitlab.example.com/s3cret", "not an http(s) URL"},
	} {
		yaml := "sources:\n  - name: a\n    dir: {path: x}\n    commitStatus: {provider: gitlab, token: tok, repo: g/p, baseURL: \"" + tc.baseURL + "\"}\n"
		_, err := Parse([]byte(yaml), "/x", env(nil))
		if err == nil || !strings.Contains(err.Error(), "sources[0].commitStatus.baseURL: ") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want sources[0].commitStatus.baseURL: …%s", tc.name, err, tc.want)
		} else if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%s: the error quotes the credential: %v", tc.name, err)
		}
	}
}
