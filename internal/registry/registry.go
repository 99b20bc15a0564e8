// Package registry owns the map of plugin kinds to factories that the action and source
// registries are made of: explicit registration (a duplicate kind is an error), no global
// state.
package registry

import (
	"fmt"
	"reflect"
	"sort"
)

// Kinds maps kind names to factories of type F.
type Kinds[F any] struct {
	what      string
	factories map[string]F
}

// New returns an empty map; what names its kinds in errors ("action", "source kind").
func New[F any](what string) *Kinds[F] {
	return &Kinds[F]{what: what, factories: map[string]F{}}
}

// Register adds a kind; an empty kind, a nil factory and a kind registered twice are errors.
func (k *Kinds[F]) Register(kind string, f F) error {
	if v := reflect.ValueOf(&f).Elem(); kind == "" || v.IsZero() {
		return fmt.Errorf("register %s: empty kind or nil factory", k.what)
	}
	if _, dup := k.factories[kind]; dup {
		return fmt.Errorf("register %s: kind %q registered twice", k.what, kind)
	}
	k.factories[kind] = f
	return nil
}

// Names lists the registered kinds, sorted.
func (k *Kinds[F]) Names() []string {
	out := make([]string, 0, len(k.factories))
	for name := range k.factories {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// Get returns kind's factory.
func (k *Kinds[F]) Get(kind string) (F, bool) {
	f, ok := k.factories[kind]
	return f, ok
}
