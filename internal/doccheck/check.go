package doccheck

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
)

// MaxReadmeLines is how long README.md may be: what trueup is and a minute to try it; the
// rest belongs in docs/.
const MaxReadmeLines = 200

// Problem is one thing wrong with the documentation, at File:Line (Line 0: the whole file).
type Problem struct {
	File string
	Line int
	Msg  string
	// Missing is the file a link or nav entry points to when that file does not exist.
	Missing string
}

func (p Problem) String() string {
	if p.Line == 0 {
		return p.File + ": " + p.Msg
	}
	return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Msg)
}

// Check applies every rule to the repository in fsys (its root) and every Markdown file in it
// (MarkdownFiles). Problems come sorted by file and line.
func Check(fsys fs.FS) ([]Problem, error) {
	pages, err := MarkdownFiles(fsys)
	if err != nil {
		return nil, err
	}
	return CheckFiles(fsys, pages)
}

// CheckFiles applies every rule to the Markdown files pages of the repository in fsys:
// relative links resolve to existing files and anchors, a page of mkdocs.yml's docs_dir links
// only inside docs_dir or to a URL (the site serves docs_dir alone), mkdocs.yml's nav names
// existing pages and every page of docs_dir, README.md is at most MaxReadmeLines lines, every
// code block is closed, and no page carries a forbidden phrase. Problems come sorted by file
// and line.
func CheckFiles(fsys fs.FS, pages []string) ([]Problem, error) {
	site, navProbs, err := readSite(fsys)
	if err != nil {
		return nil, err
	}
	probs := navProbs
	docsDir := "docs"
	if site != nil {
		docsDir = site.DocsDir
	}
	texts := map[string]string{}
	read := func(name string) (string, error) {
		if t, ok := texts[name]; ok {
			return t, nil
		}
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return "", err
		}
		texts[name] = string(b)
		return texts[name], nil
	}

	for _, page := range pages {
		src, err := read(page)
		if err != nil {
			return nil, err
		}
		if page == "README.md" {
			if n := countLines(src); n > MaxReadmeLines {
				probs = append(probs, Problem{File: page, Msg: fmt.Sprintf("%d lines, more than %d", n, MaxReadmeLines)})
			}
		}
		if line := UnclosedFence(src); line > 0 {
			probs = append(probs, Problem{File: page, Line: line, Msg: "code block opened here is never closed"})
		}
		for _, ph := range ForbiddenPhrases(src) {
			probs = append(probs, Problem{File: page, Line: ph.Line, Msg: fmt.Sprintf("%q: %s", ph.Match, ph.Why)})
		}
		for _, l := range Links(src) {
			if IsExternal(l.Target) {
				continue
			}
			probs = append(probs, checkLink(fsys, docsDir, page, l, read)...)
		}
	}
	if site != nil {
		probs = append(probs, checkNav(fsys, *site, pages)...)
	}
	sort.SliceStable(probs, func(i, j int) bool {
		if probs[i].File != probs[j].File {
			return probs[i].File < probs[j].File
		}
		return probs[i].Line < probs[j].Line
	})
	return probs, nil
}

func checkLink(fsys fs.FS, docsDir, page string, l Link, read func(string) (string, error)) []Problem {
	t, err := Resolve(page, l.Target)
	if err != nil {
		return []Problem{{File: page, Line: l.Line, Msg: "link " + err.Error()}}
	}
	if inDir(page, docsDir) && !inDir(t.File, docsDir) {
		return []Problem{{File: page, Line: l.Line, Msg: fmt.Sprintf("link %s leaves %s/, which the site serves alone: link a page of %s/ or a full URL", l.Target, docsDir, docsDir)}}
	}
	info, err := fs.Stat(fsys, t.File)
	if errors.Is(err, fs.ErrNotExist) {
		return []Problem{{File: page, Line: l.Line, Msg: fmt.Sprintf("link %s: no such file %s", l.Target, t.File), Missing: t.File}}
	}
	if err != nil {
		return []Problem{{File: page, Line: l.Line, Msg: fmt.Sprintf("link %s: %v", l.Target, err)}}
	}
	if t.Anchor == "" || info.IsDir() || !strings.HasSuffix(t.File, ".md") {
		return nil
	}
	src, err := read(t.File)
	if err != nil {
		return []Problem{{File: page, Line: l.Line, Msg: fmt.Sprintf("link %s: %v", l.Target, err)}}
	}
	if !Anchors(src)[t.Anchor] {
		return []Problem{{File: page, Line: l.Line, Msg: fmt.Sprintf("link %s: %s has no heading with anchor #%s", l.Target, t.File, t.Anchor)}}
	}
	return nil
}

// readSite reads mkdocs.yml. Without one, or with one that cannot be read, the site is the
// default (docs_dir "docs") and the problem is returned; site is nil when there is no nav to check.
func readSite(fsys fs.FS) (*Site, []Problem, error) {
	src, err := fs.ReadFile(fsys, "mkdocs.yml")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, []Problem{{File: "mkdocs.yml", Msg: "missing: the site's nav lists every page of docs/"}}, nil
	}
	if err != nil {
		return nil, nil, err
	}
	site, err := ParseMkdocs(src)
	if err != nil {
		return nil, []Problem{{File: "mkdocs.yml", Msg: err.Error()}}, nil
	}
	return &site, nil, nil
}

// inDir reports whether the slash-separated path p is dir or inside it.
func inDir(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, dir+"/")
}

func checkNav(fsys fs.FS, site Site, pages []string) []Problem {
	var probs []Problem
	listed := map[string]bool{}
	for _, e := range site.Nav {
		p := path.Join(site.DocsDir, e.Path)
		if listed[p] {
			probs = append(probs, Problem{File: "mkdocs.yml", Line: e.Line, Msg: fmt.Sprintf("nav lists %s twice", e.Path)})
		}
		listed[p] = true
		if _, err := fs.Stat(fsys, p); errors.Is(err, fs.ErrNotExist) {
			probs = append(probs, Problem{File: "mkdocs.yml", Line: e.Line, Msg: fmt.Sprintf("nav entry %s: no such file %s", e.Path, p), Missing: p})
		}
	}
	for _, page := range pages {
		if !strings.HasPrefix(page, site.DocsDir+"/") || strings.HasPrefix(page, site.DocsDir+"/screenshots/") {
			continue
		}
		if !listed[page] {
			probs = append(probs, Problem{File: page, Msg: "not in the nav of mkdocs.yml"})
		}
	}
	return probs
}

// MarkdownFiles returns every .md file of the repository in fsys in lexical order (WalkDir's),
// but those Checked leaves out and those in hidden folders (.git, a `make run` data folder).
func MarkdownFiles(fsys fs.FS) ([]string, error) {
	var files []string
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != "." && strings.HasPrefix(d.Name(), ".") {
			return fs.SkipDir
		}
		if !d.IsDir() && Checked(p) {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return files, nil
}

// Checked reports whether the file p (slash-separated, from the repository root) is a page the
// checks apply to: a .md file outside testdata/ (test inputs, not documentation) and
// node_modules/.
func Checked(p string) bool {
	if !strings.HasSuffix(p, ".md") {
		return false
	}
	for _, dir := range strings.Split(path.Dir(p), "/") {
		if dir == "testdata" || dir == "node_modules" {
			return false
		}
	}
	return true
}

// countLines counts lines as an editor does: a final newline ends the last line.
func countLines(s string) int {
	if s == "" {
		return 0
	}
	n := strings.Count(s, "\n")
	if !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}
