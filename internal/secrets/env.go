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

func (s *envStore) read(_ context.Context, name string, keys []string) ([]string, error) {
	out := make([]string, len(keys))
	for i, key := range keys {
		v, err := EnvVar(s.prefix, name, key)
		if err != nil {
			return nil, actions.Terminal(err)
		}
		val, ok := s.lookup(v)
		if !ok {
			// The variable is not named: it follows from the reference, and the prefix is
			// the operator's to know.
			return nil, actions.Terminalf("secret %q has no key %q in store %q", name, key, s.name)
		}
		out[i] = val
	}
	return out, nil
}

func (s *envStore) String() string { return fmt.Sprintf("env store %q", s.name) }
