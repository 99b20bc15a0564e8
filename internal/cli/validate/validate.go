// Package validate checks a manifests folder offline as a sync and serve's ingest would
// (`trueup validate`): parsing, schemas, and with a controller config the action instances'
// checks of each type's with: and the spec fields a Terraform module needs.
package validate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/cli"
	"github.com/trueup-dev/trueup/internal/config"
	"github.com/trueup-dev/trueup/internal/crossref"
	"github.com/trueup-dev/trueup/internal/daemon"
	"github.com/trueup-dev/trueup/internal/graph"
	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/plural"
	"github.com/trueup-dev/trueup/internal/render"
	"github.com/trueup-dev/trueup/internal/sealed"
)

// Render says how validate renders DIR before it reads it: the kustomization folders of
// --kustomize (relative to DIR), else the render block of source Source of the config.
type Render struct {
	Kustomize []string
	Source    string
}

// Folder checks the manifests folder dir (with the controller config at configPath, when
// set), prints every problem to errOut and returns cli.ExitCode(1) when there are any, or
// prints a one-line summary to out.
func Folder(dir, configPath string, rd Render, out, errOut io.Writer) error {
	if rd.Source != "" && configPath == "" {
		// --source picks a render block of the config: without one it would do nothing.
		return fmt.Errorf("--source %s names a source of the controller config: give the config with --config", rd.Source)
	}
	opts := manifest.Options{}
	scrub := func(s string) string { return s }
	var cfg *config.Config
	var built map[string]actions.Action // the action instances, when they could be built
	if configPath != "" {
		env := LenientEnv{}
		var err error
		cfg, err = config.LoadEnv(configPath, env.Env())
		if err != nil {
			return err
		}
		opts.Limits = manifest.Limits(cfg.Limits)
		grants := cfg.References.Expose
		opts.CheckReference = func(from string, target graph.ID, outputs []string) error {
			return crossref.Check(grants, from, target, outputs)
		}
		scrub = daemon.Redactor(cfg, nil).Scrub
		acts, err := Actions(cfg)
		switch {
		case err != nil && len(env) == 0:
			return err // serve would refuse this config as well
		case err != nil:
			// Likely a stand-in value for an unset variable (a URL): CI of a manifests
			// repository rarely has the controller's secrets. Say what is not checked.
			fmt.Fprintf(errOut, "warning: %v\nwarning: with %s unset, the action instances could not be built: types' with: is not checked (set them to check it as serve does)\n",
				err, strings.Join(env.Names(), ", "))
			acts = map[string]actions.Action{}
			for _, a := range cfg.Actions {
				acts[a.Name] = nil
			}
		default:
			defer daemon.CloseActions(acts)
			built = acts
			// Messages may quote the instance config (an allowlist), which may hold ${VAR}s.
			scrub = daemon.Redactor(cfg, acts).Scrub
		}
		check := daemon.CheckAction(acts)
		opts.CheckAction = func(name string, with json.RawMessage) error {
			a, ok := acts[name]
			switch {
			case !ok:
				return fmt.Errorf("action %q is not declared in %s", name, configPath)
			case a == nil:
				return nil // not built: the name is all that is checked
			}
			return check(name, with)
		}
	}
	keys, err := ageKeys(cfg)
	if err != nil && cfg != nil {
		// The sources' keys are the controller's (a variable unset in a manifests
		// repository's CI, a key file on the controller's host): check what can be.
		fmt.Fprintf(errOut, "warning: %s; encrypted files are checked with SOPS_AGE_KEY / SOPS_AGE_KEY_FILE only\n", scrub(err.Error()))
		keys, err = ageKeys(nil)
	}
	if err != nil {
		return err
	}
	renderFn, err := render.ForCLI("", rd.Kustomize, cfg, rd.Source)
	if err != nil {
		return err
	}
	read := manifest.ReadDir
	if renderFn != nil {
		read = manifest.ReadDirAll
	}
	files, err := read(dir, "")
	if err != nil {
		return err
	}
	var set *manifest.Set
	if renderFn != nil {
		opts.InputFiles = files // inputsFrom reads the files as they are, not as rendered
		files, err = renderFn(context.Background(), files)
		if problems, ok := render.Problems(err); ok {
			err = problems
		}
	}
	if err == nil {
		set, err = sealed.Load(manifest.NewLoader(), sealed.NewOpener(keys), files, opts, nil)
	}
	var verrs manifest.Errors
	if errors.As(err, &verrs) {
		for _, e := range verrs {
			fmt.Fprintln(errOut, scrub(e.Error()))
		}
		fmt.Fprintf(errOut, "%s: %s\n", dir, plural.Count(len(verrs), "error", "errors"))
		return cli.ExitCode(1)
	}
	if err != nil {
		return err
	}
	if built != nil {
		missing, warnings, err := checkRequiredFields(dir, cfg, built, set)
		if err != nil {
			return errors.New(scrub(err.Error()))
		}
		for _, w := range warnings {
			fmt.Fprintln(errOut, "warning: "+scrub(w))
		}
		for _, m := range missing {
			fmt.Fprintln(errOut, scrub(m))
		}
		if len(missing) > 0 {
			fmt.Fprintf(errOut, "%s: %s\n", dir, plural.Count(len(missing), "error", "errors"))
			return cli.ExitCode(1)
		}
	}
	fmt.Fprintf(out, "%s: valid: %s, %s\n", dir,
		plural.Count(len(set.Types), "resource type", "resource types"), plural.Count(len(set.Resources), "resource", "resources"))
	return nil
}

// ageKeys are the age identities validate decrypts with: the environment's (cli.EnvKeys), and,
// with a config, every source's.
func ageKeys(cfg *config.Config) (*sealed.Keys, error) {
	env, err := cli.EnvKeys()
	if err != nil {
		return nil, err
	}
	all := []*sealed.Keys{env}
	if cfg != nil {
		byName, err := daemon.SourceKeys(cfg)
		if err != nil {
			return nil, err
		}
		for _, k := range byName {
			all = append(all, k)
		}
	}
	return sealed.Merge(all...), nil
}

// Actions builds the config's action instances as serve does, so that a type's with:
// is checked by the very function serve's ingest uses (daemon.CheckAction). Factories validate
// without side effects; nothing is started.
func Actions(cfg *config.Config) (map[string]actions.Action, error) {
	reg, err := daemon.Registry()
	if err != nil {
		return nil, err
	}
	acts, err := daemon.NewActions(cfg, reg, slog.New(slog.DiscardHandler), "", nil)
	if err != nil {
		return nil, cfg.ScrubError(err) // factories quote the config values they refuse
	}
	return acts, nil
}

// LenientEnv stands in for unset variables when a config is read only for its structure,
// and remembers their names.
type LenientEnv map[string]bool

// Get reads the ${VAR} k from the environment, or stands in for it when it is unset.
func (e LenientEnv) Get(k string) string { return e.Env().Var(k) }

// Env reads ${VAR}s as config.LenientEnv does, remembering the unset ones, and the database
// overrides as they are (unset means none).
func (e LenientEnv) Env() config.Env {
	return config.LenientEnv(func(k string) { e[k] = true })
}

// Names are the variables that were unset, sorted.
func (e LenientEnv) Names() []string {
	out := make([]string, 0, len(e))
	for k := range e {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
