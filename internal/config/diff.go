package config

import (
	"bytes"
	"reflect"
	"slices"
)

// Changes is what a reload of the config changes: the sources and action instances added,
// removed or changed (by name, sorted), whether the notifications block changed, and the
// blocks that changed but only take effect at the next restart (by their YAML name).
type Changes struct {
	SourcesAdded, SourcesRemoved, SourcesChanged []string
	ActionsAdded, ActionsRemoved, ActionsChanged []string
	Notifications                                bool
	RestartRequired                              []string
}

// None says the reload changes nothing.
func (c Changes) None() bool {
	return len(c.SourcesAdded)+len(c.SourcesRemoved)+len(c.SourcesChanged)+len(c.ActionsAdded)+len(c.ActionsRemoved)+
		len(c.ActionsChanged)+len(c.RestartRequired) == 0 && !c.Notifications
}

// Diff compares the config running (old) with the one read again (new). A source or action
// instance whose entry differs in any field is changed (it is rebuilt whole); an action
// instance is compared on its type and its config after ${VAR} expansion, so a variable
// whose value changed changes it too. Every other block is restart-only.
func Diff(old, new *Config) Changes {
	var c Changes
	oldSrc, newSrc := map[string]Source{}, map[string]Source{}
	for _, s := range old.Sources {
		oldSrc[s.Name] = s
	}
	for _, s := range new.Sources {
		newSrc[s.Name] = s
		switch o, ok := oldSrc[s.Name]; {
		case !ok:
			c.SourcesAdded = append(c.SourcesAdded, s.Name)
		case !reflect.DeepEqual(o, s):
			c.SourcesChanged = append(c.SourcesChanged, s.Name)
		}
	}
	for _, s := range old.Sources {
		if _, ok := newSrc[s.Name]; !ok {
			c.SourcesRemoved = append(c.SourcesRemoved, s.Name)
		}
	}
	oldAct, newAct := map[string]Action{}, map[string]Action{}
	for _, a := range old.Actions {
		oldAct[a.Name] = a
	}
	for _, a := range new.Actions {
		newAct[a.Name] = a
		switch o, ok := oldAct[a.Name]; {
		case !ok:
			c.ActionsAdded = append(c.ActionsAdded, a.Name)
		case o.Type != a.Type || !bytes.Equal(o.Config, a.Config):
			c.ActionsChanged = append(c.ActionsChanged, a.Name)
		}
	}
	for _, a := range old.Actions {
		if _, ok := newAct[a.Name]; !ok {
			c.ActionsRemoved = append(c.ActionsRemoved, a.Name)
		}
	}
	c.Notifications = !reflect.DeepEqual(old.Notifications, new.Notifications)
	for _, b := range []struct {
		name     string
		old, new any
	}{
		{"database", old.Database, new.Database},
		{"dataDir", old.DataDir, new.DataDir},
		{"server", old.Server, new.Server},
		{"reconcile", old.Reconcile, new.Reconcile},
		{"retention", old.Retention, new.Retention},
		{"log", old.Log, new.Log},
		{"limits", old.Limits, new.Limits},
		{"auth", old.Auth, new.Auth},
		{"secrets", old.SecretStores, new.SecretStores},
		{"tracing", old.Tracing, new.Tracing}, // the exporter is set up once, at the start
	} {
		if !reflect.DeepEqual(b.old, b.new) {
			c.RestartRequired = append(c.RestartRequired, b.name)
		}
	}
	for _, l := range [][]string{c.SourcesAdded, c.SourcesRemoved, c.SourcesChanged, c.ActionsAdded, c.ActionsRemoved, c.ActionsChanged} {
		slices.Sort(l)
	}
	return c
}
