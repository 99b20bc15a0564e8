package ocisource

import (
	"archive/tar"
	"context"
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
	// skipped, which are decompressed all the same) and of the names kept.
	MaxArtifactBytes = 256 << 20
	// MaxArtifactEntries caps the number of entries of the tar.
	MaxArtifactEntries = 100_000
	// MaxNameBytes and MaxNameDepth cap an entry's name: a longer or deeper one is refused as
	// unsafe.
	MaxNameBytes = 1024
	MaxNameDepth = 64
)

// ctxEvery is how many entries untar reads between two looks at its context.
const ctxEvery = 256

// limits bound an unpacked artifact (tests shrink them).
type limits struct {
	entries int
	bytes   int64
}

var artifactLimits = limits{entries: MaxArtifactEntries, bytes: MaxArtifactBytes}

// entry is one file or folder of an unpacked artifact.
type entry struct {
	name       string // slash-separated, relative to the artifact's root
	dir        bool   // a folder's own entry: it has no data and is not a file
	data       []byte
	executable bool
	refused    string // why the file was not read (its data is then empty)
}

// unpacked is the files and folder entries of an artifact, sorted by name. A folder exists
// when an entry names it or lies under it; no set of folders is built, so that deep names
// cost no more than their bytes.
type unpacked struct {
	entries []entry
}

// unsafeName is the start of the reason an unsafe name is refused with.
const unsafeName = "unsafe name in the artifact"

// untar reads a tar stream: regular files up to sources.MaxFileBytes each are kept, larger
// ones and links are kept as refused, unsafe names (absolute, "..", longer than MaxNameBytes
// or deeper than MaxNameDepth) are refused with the name shortened, folders are kept as
// folder entries, and other entry types (devices, fifos) are skipped. It fails past
// lim.entries entries or lim.bytes of files and names, or when ctx ends.
func untar(ctx context.Context, r io.Reader, lim limits) (*unpacked, error) {
	// Headers, padding and the data of entries that are not files count too: a stream longer
	// than the files' cap and a header block per entry is refused while it is read.
	capped := &capReader{r: r, left: lim.bytes + int64(lim.entries)*headerAllowance}
	tr := tar.NewReader(capped)
	u := &unpacked{}
	seen := map[string]int{}
	var total int64
	for n := 0; ; n++ {
		if n%ctxEvery == 0 {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("read tar: %w", err)
			}
		}
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
		name, why := cleanName(h.Name)
		if why != "" {
			short := clip.Storable(h.Name, 256)
			if total += int64(len(short)); total > lim.bytes {
				return nil, fmt.Errorf("the artifact's files and names exceed %s", humanBytes(lim.bytes))
			}
			u.entries = append(u.entries, entry{name: short, refused: unsafeName + " (" + why + "): not read"})
			continue
		}
		if name == "" {
			continue
		}
		if total += int64(len(name)); total > lim.bytes {
			return nil, fmt.Errorf("the artifact's files and names exceed %s", humanBytes(lim.bytes))
		}
		var e entry
		switch h.Typeflag {
		case tar.TypeDir:
			u.entries = append(u.entries, entry{name: name, dir: true})
			continue
		case tar.TypeReg:
			if total += h.Size; total > lim.bytes {
				return nil, fmt.Errorf("the artifact's files and names exceed %s", humanBytes(lim.bytes))
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
	}
	sort.SliceStable(u.entries, func(i, j int) bool { return u.entries[i].name < u.entries[j].name })
	return u, nil
}

// hasDir reports whether the artifact has the folder dir (clean, "" the root): an entry
// names it as a folder, or an entry lies under it. The entries are sorted, so both are
// binary searches.
func (u *unpacked) hasDir(dir string) bool {
	if dir == "" {
		return true
	}
	prefix := dir + "/"
	i := sort.Search(len(u.entries), func(i int) bool { return u.entries[i].name >= prefix })
	if i < len(u.entries) && strings.HasPrefix(u.entries[i].name, prefix) {
		return true
	}
	for i = sort.Search(len(u.entries), func(i int) bool { return u.entries[i].name >= dir }); i < len(u.entries) && u.entries[i].name == dir; i++ {
		if u.entries[i].dir {
			return true
		}
	}
	return false
}

// cleanName makes a tar name relative and clean ("./a/b.yaml" → "a/b.yaml"); why says what
// makes a name unsafe: absolute, a ".." element, longer than MaxNameBytes or deeper than
// MaxNameDepth.
func cleanName(n string) (clean, why string) {
	if len(n) > MaxNameBytes {
		return "", fmt.Sprintf("longer than %d bytes", MaxNameBytes)
	}
	if strings.HasPrefix(n, "/") || strings.Contains(n, "\\") {
		return "", "absolute, or leading out with .."
	}
	for _, el := range strings.Split(n, "/") {
		if el == ".." {
			return "", "absolute, or leading out with .."
		}
	}
	c := path.Clean(n)
	if c == "." {
		return "", ""
	}
	if strings.Count(c, "/") >= MaxNameDepth {
		return "", fmt.Sprintf("deeper than %d levels", MaxNameDepth)
	}
	return c, ""
}

// files returns the snapshot files under dir (every regular file with all, else manifests),
// or an error wrapping sources.ErrPathNotFound when the artifact has no folder dir. Refused
// unsafe names are always included: they make the revision's problem visible.
func (u *unpacked) files(dir string, all bool) ([]sources.File, error) {
	dir = cleanDir(dir)
	if !u.hasDir(dir) {
		return nil, fmt.Errorf("%w: %q", sources.ErrPathNotFound, dir)
	}
	var out []sources.File
	for _, e := range u.entries {
		unsafe := strings.HasPrefix(e.refused, unsafeName)
		if e.dir || !unsafe && (!under(e.name, dir) || !all && !sources.IsManifest(e.name)) {
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
	if !u.hasDir(dir) {
		return nil, fmt.Errorf("folder %q: %w", dir, sources.ErrPathNotFound)
	}
	var out []sources.TreeFile
	total := 0
	for _, e := range u.entries {
		if e.dir || !under(e.name, dir) {
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
