package config

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"reflect"
	"slices"
)

// Changes is what a reload of the config changes: the sources and action instances added,
// removed or changed (by name, sorted), whether the notifications block changed, and the
// blocks that changed but only take effect at the next restart (by their YAML name).
type Changes struct {
	SourcesAdded, SourcesRemoved, SourcesChanged []string
	// WebhookOnly are the changed sources whose entries differ in their webhook block alone:
	// applied to the webhook handler without restarting the source.
	WebhookOnly                                  []string
	ActionsAdded, ActionsRemoved, ActionsChanged []string
	Notifications                                bool
	// References: the references block changed (read live: ingest and reconcile use it at
	// once; revisions rejected for a missing grant are tried again).
	References bool
	// Policies: the policies or approvalTTL changed (compiled with the config read again,
	// which the reload puts in place of the running one: no restart).
	Policies bool
	// Windows: the change windows changed (read live; the changes they held are looked at
	// again).
	Windows         bool
	RestartRequired []string
}

// None says the reload changes nothing.
func (c Changes) None() bool {
	return len(c.SourcesAdded)+len(c.SourcesRemoved)+len(c.SourcesChanged)+len(c.ActionsAdded)+len(c.ActionsRemoved)+
		len(c.ActionsChanged)+len(c.RestartRequired) == 0 && !c.Notifications && !c.References && !c.Policies &&
		!c.Windows
}

// Diff compares the config running (old) with the one read again (new). A source or action
// instance whose entry differs in any field is changed (it is rebuilt whole), and so is one
// whose referenced files (an age key file, an ssh key or known_hosts file, a GitHub App's
// private key, the files an action's kind declares) hold other bytes than when old's were
// read (ReadFiles): a key rotated in place is picked up. An action instance is compared on its type and its config
// after ${VAR} expansion; serve reads its environment once, at start, so a variable's value
// never changes between two of its loads. Every other block is restart-only.
func Diff(old, new *Config) Changes {
	var c Changes
	srcName := func(s Source) string { return s.Name }
	c.SourcesAdded, c.SourcesRemoved, c.SourcesChanged = diffByName(old.Sources, new.Sources, srcName, func(o, n Source) bool {
		if old.fileSums[sourceKey(n.Name)] != new.fileSums[sourceKey(n.Name)] {
			return true
		}
		if reflect.DeepEqual(o, n) {
			return false
		}
		if o.Webhook = n.Webhook; reflect.DeepEqual(o, n) {
			c.WebhookOnly = append(c.WebhookOnly, n.Name)
		}
		return true
	})
	actName := func(a Action) string { return a.Name }
	c.ActionsAdded, c.ActionsRemoved, c.ActionsChanged = diffByName(old.Actions, new.Actions, actName, func(o, n Action) bool {
		return o.Type != n.Type || !bytes.Equal(o.Config, n.Config) || old.fileSums[actionKey(n.Name)] != new.fileSums[actionKey(n.Name)]
	})
	c.Notifications = !reflect.DeepEqual(old.Notifications, new.Notifications)
	c.References = !reflect.DeepEqual(old.References, new.References)
	c.Policies = (len(old.Policies) > 0 || len(new.Policies) > 0) && !reflect.DeepEqual(old.Policies, new.Policies) ||
		old.ApprovalTTL != new.ApprovalTTL
	c.Windows = (len(old.Windows) > 0 || len(new.Windows) > 0) && !reflect.DeepEqual(old.Windows, new.Windows)
	c.RestartRequired = RestartOnlyChanged(old, new)
	for _, l := range [][]string{c.SourcesAdded, c.SourcesRemoved, c.SourcesChanged, c.WebhookOnly, c.ActionsAdded, c.ActionsRemoved, c.ActionsChanged} {
		slices.Sort(l)
	}
	return c
}

// diffByName compares two lists of named entries: the names only in next (added), only in
// prev (removed), and in both with changed(prev's, next's) true.
func diffByName[T any](prev, next []T, name func(T) string, changed func(o, n T) bool) (added, removed, changedNames []string) {
	byName := make(map[string]T, len(prev))
	for _, e := range prev {
		byName[name(e)] = e
	}
	kept := make(map[string]bool, len(next))
	for _, e := range next {
		kept[name(e)] = true
		switch o, ok := byName[name(e)]; {
		case !ok:
			added = append(added, name(e))
		case changed(o, e):
			changedNames = append(changedNames, name(e))
		}
	}
	for _, e := range prev {
		if !kept[name(e)] {
			removed = append(removed, name(e))
		}
	}
	return added, removed, changedNames
}

// restartOnly are the blocks read once, at start (by their YAML name): the database pool,
// the data folder, the listener, workers and lease TTL, retention, the logger, the limits,
// who may do what, the secret stores. field returns a pointer to the block in c.
var restartOnly = []struct {
	name  string
	field func(c *Config) any
}{
	{"database", func(c *Config) any { return &c.Database }},
	{"dataDir", func(c *Config) any { return &c.DataDir }},
	{"server", func(c *Config) any { return &c.Server }},
	{"reconcile", func(c *Config) any { return &c.Reconcile }},
	{"retention", func(c *Config) any { return &c.Retention }},
	{"log", func(c *Config) any { return &c.Log }},
	{"limits", func(c *Config) any { return &c.Limits }},
	{"auth", func(c *Config) any { return &c.Auth }},
	{"secrets", func(c *Config) any { return &c.SecretStores }},
	{"tracing", func(c *Config) any { return &c.Tracing }}, // the exporter is set up once, at the start
}

// RestartOnlyChanged lists the restart-only blocks whose values differ between the config
// running and the one read again, in restartOnly's order.
func RestartOnlyChanged(running, next *Config) []string {
	var out []string
	for _, b := range restartOnly {
		if !reflect.DeepEqual(b.field(running), b.field(next)) {
			out = append(out, b.name)
		}
	}
	return out
}

// KeepRestartOnly gives next the running values of every restart-only block, so that nothing
// a reload builds from next (a source's mirror folder, a syncer's lease TTL, a commit status
// link, the notification sender's retention) uses a value that is not in effect. Diff against
// the running config then lists the blocks that still differ from the file after each reload,
// until a restart.
func KeepRestartOnly(next, running *Config) {
	for _, b := range restartOnly {
		reflect.ValueOf(b.field(next)).Elem().Set(reflect.ValueOf(b.field(running)).Elem())
	}
	next.resyncSet = running.resyncSet
}

func sourceKey(name string) string { return "source/" + name }
func actionKey(name string) string { return "action/" + name }

// ActionFiles lists the files an action instance's config names, by its kind
// (actions.Registry.Files): paths as written, relative ones relative to the config's folder.
type ActionFiles func(kind string, config json.RawMessage) ([]string, error)

// referencedFiles lists, by source and action instance, the files whose content they are
// built from: a source's decryption.age.keyFile and the files its kind declares
// (sources.Spec.Files: a git source's ssh key, known hosts and GitHub App key); the files an
// action's kind declares to actions (github-actions' app.privateKeyFile; nil: none),
// relative to the config's folder. A config its kind cannot decode names none: it is refused when
// its instance is built.
func (c *Config) referencedFiles(actions ActionFiles) map[string][]string {
	out := map[string][]string{}
	for _, s := range c.Sources {
		var files []string
		if d := s.Decryption; d != nil && d.Age != nil && d.Age.KeyFile != "" {
			files = append(files, c.Path(d.Age.KeyFile))
		}
		for _, sp := range s.Specs() {
			files = append(files, sp.Files()...)
		}
		if files = slices.DeleteFunc(files, func(f string) bool { return f == "" }); len(files) > 0 {
			out[sourceKey(s.Name)] = files
		}
	}
	if actions == nil {
		return out
	}
	for _, a := range c.Actions {
		named, err := actions(a.Type, a.Config)
		if err != nil {
			continue
		}
		var files []string
		for _, f := range named {
			if f != "" {
				files = append(files, c.Path(f))
			}
		}
		if len(files) > 0 {
			slices.Sort(files)
			out[actionKey(a.Name)] = files
		}
	}
	return out
}

// ReadFiles digests the content of the files each source and action instance names, for
// Diff: the host calls it once it has the config, before it builds anything from it. actions
// says which files an action kind's config names (nil: none).
func (c *Config) ReadFiles(actions ActionFiles) { c.fileSums = c.readFileSums(actions) }

// readFileSums digests the content of each source's and action's referenced files (a file
// that cannot be read digests as its error, so that it being fixed is a change too).
func (c *Config) readFileSums(actions ActionFiles) map[string]string {
	out := map[string]string{}
	for key, files := range c.referencedFiles(actions) {
		h := sha256.New()
		for _, f := range files {
			h.Write([]byte(f + "\x00"))
			if b, err := os.ReadFile(f); err != nil {
				h.Write([]byte("error: " + err.Error()))
			} else {
				h.Write(b)
			}
			h.Write([]byte{0})
		}
		out[key] = hex.EncodeToString(h.Sum(nil))
	}
	return out
}
