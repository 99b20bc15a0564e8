package terraform

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"

	"github.com/trueup-dev/trueup/actions"
)

// variableSchema finds a file's variable blocks; variableBody, whether one has a default.
var (
	variableSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "variable", LabelNames: []string{"name"}}}}
	variableBody   = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "default"}}}
)

// moduleFile is one configuration or variable-definitions file of a root module.
type moduleFile struct {
	name, path string
	json       bool
	override   bool // override.tf, *_override.tf (and their .json and .tofu forms)
	tfvars     bool // terraform.tfvars(.json), *.auto.tfvars(.json): loaded automatically
}

// ignoredFile are the names Terraform skips in a module folder: dotfiles (an editor's lock
// files such as .#main.tf), backups ending in ~, and #autosave# files.
func ignoredFile(name string) bool {
	return strings.HasPrefix(name, ".") || strings.HasSuffix(name, "~") ||
		(strings.HasPrefix(name, "#") && strings.HasSuffix(name, "#"))
}

// moduleFiles lists the files of dir that Terraform (tofu: OpenTofu) reads as configuration
// or loads as variable values, in name order. OpenTofu also reads .tofu and .tofu.json files,
// and a .tofu file replaces the .tf file of the same base name.
func moduleFiles(dir string, tofu bool) ([]moduleFile, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := map[string]bool{}
	for _, e := range entries {
		names[e.Name()] = true
	}
	var out []moduleFile
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || ignoredFile(name) || name == overrideFile || name == sensitiveFile {
			continue
		}
		f := moduleFile{name: name, path: filepath.Join(dir, name)}
		var base string
		switch {
		case strings.HasSuffix(name, ".tf.json"):
			base, f.json = strings.TrimSuffix(name, ".tf.json"), true
			if tofu && names[base+".tofu.json"] {
				continue
			}
		case strings.HasSuffix(name, ".tf"):
			base = strings.TrimSuffix(name, ".tf")
			if tofu && names[base+".tofu"] {
				continue
			}
		case tofu && strings.HasSuffix(name, ".tofu.json"):
			base, f.json = strings.TrimSuffix(name, ".tofu.json"), true
		case tofu && strings.HasSuffix(name, ".tofu"):
			base = strings.TrimSuffix(name, ".tofu")
		case name == "terraform.tfvars" || strings.HasSuffix(name, ".auto.tfvars"):
			f.tfvars = true
		case name == "terraform.tfvars.json" || strings.HasSuffix(name, ".auto.tfvars.json"):
			f.tfvars, f.json = true, true
		default:
			continue
		}
		f.override = !f.tfvars && (base == "override" || strings.HasSuffix(base, "_override"))
		out = append(out, f)
	}
	return out, nil
}

// requiredVariables are the variables of the root module in dir that a call's var file (the
// spec) must set, in file and line order: those declared without a default, unless an override
// file gives them one, a variable-definitions file of the module (terraform.tfvars,
// *.auto.tfvars) sets them, or env (the instance's "K=V" environment) sets TF_VAR_<name>.
// Terraform refuses a call that leaves one unset. Files are parsed with HCL's own parser; a
// file it cannot parse is an error.
func requiredVariables(dir string, tofu bool, env []string) ([]actions.RequiredField, error) {
	files, err := moduleFiles(dir, tofu)
	if err != nil {
		return nil, err
	}
	p := hclparse.NewParser()
	set := map[string]bool{}
	for _, kv := range env {
		if name, ok := strings.CutPrefix(kv, "TF_VAR_"); ok {
			name, _, _ = strings.Cut(name, "=")
			set[name] = true
		}
	}
	var declared []actions.RequiredField
	seen := map[string]bool{}
	for _, mf := range files {
		var f *hcl.File
		var diags hcl.Diagnostics
		if mf.json {
			f, diags = p.ParseJSONFile(mf.path)
		} else {
			f, diags = p.ParseHCLFile(mf.path)
		}
		if diags.HasErrors() {
			return nil, errors.New(diags.Error())
		}
		if mf.tfvars {
			attrs, diags := f.Body.JustAttributes()
			if diags.HasErrors() {
				return nil, errors.New(diags.Error())
			}
			for name := range attrs {
				set[name] = true
			}
			continue
		}
		content, _, diags := f.Body.PartialContent(variableSchema)
		if diags.HasErrors() {
			return nil, errors.New(diags.Error())
		}
		for _, b := range content.Blocks {
			body, _, diags := b.Body.PartialContent(variableBody)
			if diags.HasErrors() {
				return nil, errors.New(diags.Error())
			}
			name := b.Labels[0]
			_, hasDefault := body.Attributes["default"]
			switch {
			case hasDefault:
				// An override's default counts as the variable's own (Terraform merges it).
				set[name] = true
			case !mf.override && !seen[name]:
				seen[name] = true
				declared = append(declared, actions.RequiredField{Name: name, File: mf.path, Line: b.DefRange.Start.Line})
			}
		}
	}
	var out []actions.RequiredField
	for _, v := range declared {
		if !set[v.Name] {
			out = append(out, v)
		}
	}
	slices.SortFunc(out, func(a, b actions.RequiredField) int {
		if c := strings.Compare(a.File, b.File); c != 0 {
			return c
		}
		return a.Line - b.Line
	})
	return out, nil
}

// RequiredSpecFields are the module's variables that only the spec can set (see
// requiredVariables): the spec is the var file, so each must be a field of every resource's
// spec. A module of a source's repository is read from its local checkout.
func (a *Action) RequiredSpecFields(repoDir func(source string) string) ([]actions.RequiredField, error) {
	dir := a.module
	if a.repo.source != "" {
		root := repoDir(a.repo.source)
		if root == "" {
			return nil, fmt.Errorf("module %s of source %s: no checkout of the repository here", a.repo.path, a.repo.source)
		}
		dir = filepath.Join(root, filepath.FromSlash(a.repo.path))
	}
	tofu := strings.Contains(filepath.Base(a.binary), "tofu")
	vars, err := requiredVariables(dir, tofu, a.env)
	if err != nil {
		return nil, fmt.Errorf("module %s: %w", dir, err)
	}
	return vars, nil
}

var _ actions.SpecRequirer = (*Action)(nil)
