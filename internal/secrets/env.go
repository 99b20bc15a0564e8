package secrets

import (
	"context"
	"fmt"

	"github.com/trueup-dev/trueup/actions"
)

// envStore reads variables of the controller's environment that start with its prefix
// (EnvVar). It is the one place outside cmd/ and internal/config that reads the
// environment: the operator exposed those variables to manifests by naming the prefix.
type envStore struct {
	name   string
	prefix string
	lookup func(string) (string, bool)
}

func (s *envStore) read(_ context.Context, name, key string) (string, error) {
	v, err := EnvVar(s.prefix, name, key)
	if err != nil {
		return "", actions.Terminal(err)
	}
	val, ok := s.lookup(v)
	if !ok {
		// The variable is not named: it is derived from the reference, and the prefix is
		// the operator's to know.
		return "", actions.Terminalf("secret %q has no key %q in store %q", name, key, s.name)
	}
	return val, nil
}

func (s *envStore) String() string { return fmt.Sprintf("env store %q", s.name) }
