package ocisource

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"

	"github.com/trueup-dev/trueup/internal/clip"
	"github.com/trueup-dev/trueup/sources"
)

// Limits of an artifact: a configuration artifact is small; a huge one is a mistake (the
// wrong image) and must cost an error, not the controller's memory.
const (
	// MaxLayerBytes caps the compressed content layer, checked against the manifest's size
	// before anything is downloaded.
	MaxLayerBytes = 64 << 20
	// MaxArtifactBytes caps the sum of the sizes of the artifact's regular files (also those
	// skipped, which are decompressed all the same).
	MaxArtifactBytes = 256 << 20
	// MaxArtifactEntries caps the number of entries of the tar.
	MaxArtifactEntries = 100_000
)

// limits bound an unpacked artifact (tests shrink them).
type limits struct {
	entries int
	bytes   int64
}

var artifactLimits = limits{entries: MaxArtifactEntries, bytes: MaxArtifactBytes}

// entry is one file of an unpacked artifact.
type entry struct {
	name       string // slash-separated, relative to the artifact's root
	data       []byte
	executable bool
	refused    string // why the file was not read (its data is then empty)
}

// unpacked is the files of an artifact, sorted by name, and its folders.
type unpacked struct {
	entries []entry
	dirs    map[string]bool // every folder holding an entry, "" the root
}

// untar reads a tar stream: regular files up to sources.MaxFileBytes each are kept, larger
// ones and links are kept as refused, unsafe names (absolute, "..") are refused, and other
// entry types (devices, fifos) are skipped. Folders are recorded. It fails past lim.entries
// entries or lim.bytes of files.
func untar(r io.Reader, lim limits) (*unpacked, error) {
	// Headers, padding and the data of entries that are not files count too: a stream longer
	// than the files' cap and a header block per entry is refused while it is read.
	capped := &capReader{r: r, left: lim.bytes + int64(lim.entries)*headerAllowance}
	tr := tar.NewReader(capped)
	u := &unpacked{dirs: map[string]bool{"": true}}
	seen := map[string]int{}
	var total int64
	for n := 0; ; n++ {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if capped.over {
				return nil, fmt.Errorf("the artifact unpacks to more than %s", humanBytes(capped.limit()))
			}
			return nil, fmt.Errorf("read tar: %w", err)
		}
		if n >= lim.entries {
			return nil, fmt.Errorf("more than %d entries in the artifact", lim.entries)
		}
		name, ok := cleanName(h.Name)
		if !ok {
			u.entries = append(u.entries, entry{name: clip.Storable(h.Name, 256), refused: "unsafe name in the artifact (absolute, or leading out with ..): not read"})
			continue
		}
		if name == "" {
			continue
		}
		var e entry
		switch h.Typeflag {
		case tar.TypeDir:
			u.addDirs(name + "/x")
			continue
		case tar.TypeReg:
			if total += h.Size; total > lim.bytes {
				return nil, fmt.Errorf("the artifact's files exceed %s", humanBytes(lim.bytes))
			}
			e = entry{name: name, executable: h.Mode&0o111 != 0}
			if h.Size > sources.MaxFileBytes {
				e.refused = sources.TooLarge(h.Size)
				break
			}
			data, err := io.ReadAll(io.LimitReader(tr, sources.MaxFileBytes+1))
			if err != nil && capped.over {
				return nil, fmt.Errorf("the artifact unpacks to more than %s", humanBytes(capped.limit()))
			}
			if err != nil {
				return nil, fmt.Errorf("read %s: %w", name, err)
			}
			e.data = data
		case tar.TypeSymlink, tar.TypeLink:
			e = entry{name: name, refused: "a link in the artifact: links are not followed"}
		default:
			continue
		}
		if i, dup := seen[name]; dup {
			u.entries[i] = entry{name: name, refused: "the artifact holds this path twice"}
			continue
		}
		seen[name] = len(u.entries)
		u.entries = append(u.entries, e)
		u.addDirs(name)
	}
	sort.Slice(u.entries, func(i, j int) bool { return u.entries[i].name < u.entries[j].name })
	return u, nil
}

// addDirs records the folders above name.
func (u *unpacked) addDirs(name string) {
	for d := path.Dir(name); d != "." && !u.dirs[d]; d = path.Dir(d) {
		u.dirs[d] = true
	}
}

// cleanName makes a tar name relative and clean ("./a/b.yaml" → "a/b.yaml"); ok is false for
// an absolute name or one with a ".." element.
func cleanName(n string) (string, bool) {
	if strings.HasPrefix(n, "/") || strings.Contains(n, "\\") {
		return "", false
	}
	for _, el := range strings.Split(n, "/") {
		if el == ".." {
			return "", false
		}
	}
	c := path.Clean(n)
	if c == "." {
		return "", true
	}
	return c, true
}

// files returns the snapshot files under dir (every regular file with all, else manifests),
// or an error wrapping sources.ErrPathNotFound when the artifact has no folder dir. Refused
// unsafe names are always included: they make the revision's problem visible.
func (u *unpacked) files(dir string, all bool) ([]sources.File, error) {
	dir = cleanDir(dir)
	if !u.dirs[dir] {
		return nil, fmt.Errorf("%w: %q", sources.ErrPathNotFound, dir)
	}
	var out []sources.File
	for _, e := range u.entries {
		unsafe := strings.HasPrefix(e.refused, "unsafe name")
		if !unsafe && (!under(e.name, dir) || !all && !sources.IsManifest(e.name)) {
			continue
		}
		f := sources.File{Path: e.name, Refused: e.refused}
		if e.refused == "" {
			sum := sha256.Sum256(e.data)
			f.Hash, f.Data = hex.EncodeToString(sum[:]), e.data
		}
		out = append(out, f)
	}
	return out, nil
}

// tree returns the files under dir as a TreeReader does: paths relative to dir, an error
// wrapping sources.ErrTreeRefused for a refused file or a folder over the tree limits.
func (u *unpacked) tree(dir string) ([]sources.TreeFile, error) {
	dir = cleanDir(dir)
	if !u.dirs[dir] {
		return nil, fmt.Errorf("folder %q: %w", dir, sources.ErrPathNotFound)
	}
	var out []sources.TreeFile
	total := 0
	for _, e := range u.entries {
		if !under(e.name, dir) {
			continue
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(e.name, dir), "/")
		switch {
		case e.refused != "":
			return nil, fmt.Errorf("folder %q: %s: %s: %w", dir, rel, e.refused, sources.ErrTreeRefused)
		case len(out) >= sources.MaxTreeFiles:
			return nil, fmt.Errorf("folder %q: more than %d files: %w", dir, sources.MaxTreeFiles, sources.ErrTreeRefused)
		}
		if total += len(e.data); total > sources.MaxTreeBytes {
			return nil, fmt.Errorf("folder %q: more than %d MiB: %w", dir, sources.MaxTreeBytes>>20, sources.ErrTreeRefused)
		}
		out = append(out, sources.TreeFile{Path: rel, Executable: e.executable, Data: e.data})
	}
	return out, nil
}

func cleanDir(dir string) string {
	dir = path.Clean(strings.Trim(dir, "/"))
	if dir == "." {
		return ""
	}
	return dir
}

func under(name, dir string) bool {
	return dir == "" || strings.HasPrefix(name, dir+"/")
}

func humanBytes(n int64) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// headerAllowance is what one entry may take besides its file's data (a header block, a
// long name or a PAX record, padding).
const headerAllowance = 4 << 10

// capReader fails reads past left bytes.
type capReader struct {
	r    io.Reader
	left int64
	read int64
	over bool
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		c.over = true
		return 0, errors.New("artifact too large")
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	c.read += int64(n)
	return n, err
}

func (c *capReader) limit() int64 { return c.read + c.left }
