package actions

import (
	"fmt"
	"slices"
	"strings"
)

// minimalEnvVars are the controller's variables a plugin's child process gets unless its
// config says otherwise: enough to find programs, a home folder, a locale and a temp folder.
// PWD is the process's own working directory (exec.Cmd.Environ sets it from Dir).
var minimalEnvVars = []string{"PATH", "HOME", "LANG", "TMPDIR", "PWD"}

// MinimalEnv keeps, of environ, the variables of a minimal environment, so that a host
// credential the config never handed a child process (a cloud token in trueup's environment,
// TRUEUP_DATABASE_URL) cannot be read, returned as an output, or passed on.
func MinimalEnv(environ []string) []string {
	return slices.DeleteFunc(slices.Clone(environ), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return !slices.Contains(minimalEnvVars, name)
	})
}

// secretNameParts mark a config env variable whose value is a secret (API_TOKEN,
// DB_PASSWORD, SSH_KEY_FILE…), matched case-insensitively anywhere in the name.
var secretNameParts = []string{"TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASS", "KEY", "CREDENTIAL", "AUTH", "CERT", "PRIVATE"}

// SecretName reports whether a config env variable of this name holds a secret. Other values
// (DEMO_DIR, REGION) are settings that messages may quote; a value that came from a ${VAR} is
// scrubbed by the controller whatever its name.
func SecretName(name string) bool {
	upper := strings.ToUpper(name)
	return slices.ContainsFunc(secretNameParts, func(part string) bool { return strings.Contains(upper, part) })
}

// ParseEnv reads a plugin's `env:` setting into KEY=VALUE entries (sorted by key) and the
// values to scrub (secret-named keys whose values are at least minSecret long, longest
// first). reserved gives the reason a key may not be set ("" when it may). Errors name keys,
// never values: values may be secrets.
func ParseEnv(env map[string]string, reserved func(key string) string, minSecret int) (vars, secrets []string, err error) {
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := env[k]
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return nil, nil, fmt.Errorf("config: env: invalid variable name %q", k)
		}
		if why := reserved(k); why != "" {
			return nil, nil, fmt.Errorf("config: env %s: %s", k, why)
		}
		if strings.ContainsRune(v, 0) {
			return nil, nil, fmt.Errorf("config: env %s: value contains a NUL byte", k)
		}
		vars = append(vars, k+"="+v)
		if SecretName(k) && len(v) >= minSecret && !slices.Contains(secrets, v) {
			secrets = append(secrets, v)
		}
	}
	// Longest first, so that a secret containing another is replaced whole.
	slices.SortFunc(secrets, func(a, b string) int { return len(b) - len(a) })
	return vars, secrets, nil
}
