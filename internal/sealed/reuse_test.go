package sealed_test

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/sealed"
	"github.com/trueup-dev/trueup/internal/sealed/sealedtest"
	"github.com/trueup-dev/trueup/sources"
)

// oneLoaderRevisions are three revisions of an encrypted file and an unencrypted one; only
// the unencrypted file changes between them.
func oneLoaderRevisions(t *testing.T) (*sealed.Keys, [][]sources.File) {
	t.Helper()
	identity, recipient := sealedtest.Key()
	keys, err := sealed.ParseAgeKeys(identity)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := sealedtest.Encrypt("db.yaml",
		[]byte("apiVersion: example.com/v1\nkind: Database\nmetadata: {name: orders, namespace: prod}\nspec:\n  password: s3cr3t-Passw0rd\n  port: 5432\n"),
		"^(password|port)$", recipient)
	if err != nil {
		t.Fatal(err)
	}
	var revs [][]sources.File
	for i := range 3 {
		plain := fmt.Sprintf("apiVersion: example.com/v1\nkind: Database\nmetadata: {name: users, namespace: prod}\nspec: {password: plain-password-%d}\n", i)
		revs = append(revs, []sources.File{
			{Path: "types.yaml", Hash: "t", Data: []byte(typeDoc)},
			{Path: "db.yaml", Hash: "db", Data: enc},
			{Path: "plain.yaml", Hash: fmt.Sprint("plain", i), Data: []byte(plain)},
		})
	}
	return keys, revs
}

// TestReviewLoadMaskedTwice: LoadMasked rewrites the hashes of an encrypted file's resources
// after each load; a Loader kept across revisions (a preview's) builds them again rather than
// taking the rewritten ones from its last Set, so that an unchanged encrypted resource shows
// no change from the second load on.
func TestReviewLoadMaskedTwice(t *testing.T) {
	t.Parallel()
	_, revs := oneLoaderRevisions(t)
	applied := func(ks []manifest.ResourceKey) (map[manifest.ResourceKey]sealed.Applied, error) { return nil, nil }
	l := manifest.NewLoader()
	for i, files := range revs {
		got, err := sealed.LoadMasked(l, files, manifest.Options{}, applied, nil)
		if err != nil {
			t.Fatal(err)
		}
		want, err := sealed.LoadMasked(manifest.NewLoader(), files, manifest.Options{}, applied, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got.Resources, want.Resources) {
			t.Fatalf("load %d: %+v\nwant a fresh loader's %+v", i, got.Resources, want.Resources)
		}
	}
}

// TestLoadOneLoaderAcrossRevisions: sealed.Load redacts the encrypted file's resources after
// each load; a Loader and Opener kept across revisions (a syncer's, which lets the loader
// write into its last Set) give what fresh ones give.
func TestLoadOneLoaderAcrossRevisions(t *testing.T) {
	t.Parallel()
	keys, revs := oneLoaderRevisions(t)
	l, op := manifest.NewLoader(), sealed.NewOpener(keys)
	for i, files := range revs {
		got, err := sealed.Load(l, op, files, manifest.Options{ReuseSet: true}, nil)
		if err != nil {
			t.Fatal(err)
		}
		want, err := sealed.Load(manifest.NewLoader(), sealed.NewOpener(keys), files, manifest.Options{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got.Resources, want.Resources) {
			t.Fatalf("load %d: %+v\nwant a fresh loader's %+v", i, got.Resources, want.Resources)
		}
	}
}

// TestLoadHandsBackARefusedSet: a Set the loader returned that Load then refuses (the check
// rejects the revision) never reaches the caller, so Load hands it back itself: the next load
// with ReuseSet writes into it, as into a Set its caller handed back.
func TestLoadHandsBackARefusedSet(t *testing.T) {
	t.Parallel()
	keys, revs := oneLoaderRevisions(t)
	l, op := manifest.NewLoader(), sealed.NewOpener(keys)
	var refused *manifest.Set
	_, err := sealed.Load(l, op, revs[0], manifest.Options{ReuseSet: true}, func(set *manifest.Set) error {
		refused = set
		return manifest.Errors{{File: "plain.yaml", Line: 1, Msg: "refused by the check"}}
	})
	if err == nil || refused == nil {
		t.Fatalf("the check's refusal: err %v, Set seen %t", err, refused != nil)
	}
	got, err := sealed.Load(l, op, revs[1], manifest.Options{ReuseSet: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if &got.Resources[0] != &refused.Resources[0] {
		t.Fatal("the next load did not write into the refused Set: it was not handed back")
	}
}

// TestLoadDropDataWithEncryptedFiles: with Options.DropData, Load gives up the data of the
// caller's plain files when the loader does (a revision past the documents it keeps), though
// the loader loads a copy of the files with the encrypted one opened; the encrypted file's
// data stays, and the Set is the one a load that keeps the data gives.
func TestLoadDropDataWithEncryptedFiles(t *testing.T) {
	t.Parallel()
	keys, revs := oneLoaderRevisions(t)
	repo := func() []sources.File {
		fs := slices.Clone(revs[0])
		for f := range 101 { // 50,500 resources: past the 50,000 whose documents the loader keeps
			var b strings.Builder
			for i := range 500 {
				fmt.Fprintf(&b, "---\napiVersion: example.com/v1\nkind: Database\nmetadata: {name: d%03d-%03d, namespace: prod}\nspec: {password: password-%03d}\n", f, i, i)
			}
			fs = append(fs, sources.File{Path: fmt.Sprintf("many/%03d.yaml", f), Hash: fmt.Sprint("many", f), Data: []byte(b.String())})
		}
		return fs
	}
	files := repo()
	got, err := sealed.Load(manifest.NewLoader(), sealed.NewOpener(keys), files, manifest.Options{DropData: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if encrypted := f.Path == "db.yaml"; (f.Data == nil) == encrypted {
			t.Fatalf("%s: data given up %t (encrypted: %t)", f.Path, f.Data == nil, encrypted)
		}
	}
	want, err := sealed.Load(manifest.NewLoader(), sealed.NewOpener(keys), repo(), manifest.Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Resources) != 50_502 || !reflect.DeepEqual(got.Resources, want.Resources) {
		t.Fatalf("%d resources; equal to a load that keeps the data: %t", len(got.Resources), reflect.DeepEqual(got.Resources, want.Resources))
	}
}
