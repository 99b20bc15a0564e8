package secrets

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/trueup-dev/trueup/actions"
)

// MaxFileSecret caps one file store value; a larger file is refused unread.
const MaxFileSecret = 256 << 10

// fileStore reads dir/NAME/KEY through an os.Root, which refuses any path, symlinks
// included, that leads outside dir. The folder is opened per read, so files and the
// folder itself may be replaced (a mounted Kubernetes Secret swaps a symlink) while trueup runs.
type fileStore struct {
	name string
	dir  string
}

func (s *fileStore) read(_ context.Context, name string, keys []string) ([]string, error) {
	root, err := os.OpenRoot(s.dir)
	if err != nil {
		return nil, fmt.Errorf("store %q: %w", s.name, err)
	}
	defer root.Close()
	out := make([]string, len(keys))
	for i, key := range keys {
		if out[i], err = s.readKey(root, name, key); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (s *fileStore) readKey(root *os.Root, name, key string) (string, error) {
	f, err := root.Open(FilePath(name, key))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", actions.Terminalf("secret %q has no key %q in store %q", name, key, s.name)
		}
		if escapes(err) {
			// A symlink that leads outside dir: the reference cannot succeed as written.
			return "", actions.Terminalf("secret %q key %q in store %q: leads outside the store's folder", name, key, s.name)
		}
		// A permission problem or the like is the operator's to fix; retried.
		return "", fmt.Errorf("secret %q key %q in store %q: %s", name, key, s.name, reason(err))
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("store %q: %w", s.name, err)
	}
	if !st.Mode().IsRegular() {
		return "", actions.Terminalf("secret %q key %q in store %q: not a regular file", name, key, s.name)
	}
	if st.Size() > MaxFileSecret {
		return "", actions.Terminalf("secret %q key %q in store %q: larger than %d bytes", name, key, s.name, MaxFileSecret)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxFileSecret+1))
	if err != nil {
		return "", fmt.Errorf("store %q: read %s: %w", s.name, FilePath(name, key), err)
	}
	if len(b) > MaxFileSecret {
		return "", actions.Terminalf("secret %q key %q in store %q: larger than %d bytes", name, key, s.name, MaxFileSecret)
	}
	return trimNewline(string(b)), nil
}

// trimNewline drops one trailing "\n" or "\r\n", which editors and `echo` add.
func trimNewline(s string) string {
	s, ok := strings.CutSuffix(s, "\n")
	if ok {
		s = strings.TrimSuffix(s, "\r")
	}
	return s
}

// escapes reports whether os.Root refused a path for leading outside its folder (the
// error is not exported).
func escapes(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe) && strings.Contains(pe.Err.Error(), "escapes")
}

// reason is err without the path it names.
func reason(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
