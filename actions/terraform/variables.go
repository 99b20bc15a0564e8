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

// requiredVariables are the variables without a default that the root module in dir declares
// in its .tf and .tf.json files, in file and line order: Terraform refuses a call whose var
// file lacks one. Files are parsed with HCL's own parser; a file it cannot parse is an error.
func requiredVariables(dir string) ([]actions.RequiredField, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	p := hclparse.NewParser()
	var out []actions.RequiredField
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || name == overrideFile || name == sensitiveFile {
			continue
		}
		path := filepath.Join(dir, name)
		var f *hcl.File
		var diags hcl.Diagnostics
		switch {
		case strings.HasSuffix(name, ".tf"):
			f, diags = p.ParseHCLFile(path)
		case strings.HasSuffix(name, ".tf.json"):
			f, diags = p.ParseJSONFile(path)
		default:
			continue
		}
		if diags.HasErrors() {
			return nil, errors.New(diags.Error())
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
			if _, ok := body.Attributes["default"]; !ok {
				out = append(out, actions.RequiredField{Name: b.Labels[0], File: path, Line: b.DefRange.Start.Line})
			}
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

// RequiredSpecFields are the module's variables without a default: the spec is the var file,
// so each must be a field of every resource's spec. A module of a source's repository is read
// from its local checkout.
func (a *Action) RequiredSpecFields(repoDir func(source string) string) ([]actions.RequiredField, error) {
	dir := a.module
	if a.repo.source != "" {
		root := repoDir(a.repo.source)
		if root == "" {
			return nil, fmt.Errorf("module %s of source %s: no checkout of the repository here", a.repo.path, a.repo.source)
		}
		dir = filepath.Join(root, filepath.FromSlash(a.repo.path))
	}
	vars, err := requiredVariables(dir)
	if err != nil {
		return nil, fmt.Errorf("module %s: %w", dir, err)
	}
	return vars, nil
}

var _ actions.SpecRequirer = (*Action)(nil)
