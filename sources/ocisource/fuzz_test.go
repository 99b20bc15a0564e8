package ocisource

import (
	"archive/tar"
	"bytes"
	"context"
	"path"
	"strings"
	"testing"
)

// FuzzUntar reads arbitrary bytes as an artifact's tar: it must not panic, and every file it
// keeps is within the limits and has a clean relative name, or is refused.
func FuzzUntar(f *testing.F) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	_ = tw.WriteHeader(&tar.Header{Name: "a/b.yaml", Typeflag: tar.TypeReg, Size: 3, Mode: 0o644})
	_, _ = tw.Write([]byte("x:1"))
	_ = tw.WriteHeader(&tar.Header{Name: "../c.yaml", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"})
	_ = tw.Close()
	f.Add(buf.Bytes())
	f.Add([]byte{})
	f.Add(hostileDirs(f))
	f.Fuzz(func(t *testing.T, data []byte) {
		u, err := untar(context.Background(), bytes.NewReader(data), limits{entries: 100, bytes: 1 << 20})
		if err != nil {
			return
		}
		for _, e := range u.entries {
			if e.refused != "" {
				continue
			}
			if len(e.data) > 1<<20 || path.IsAbs(e.name) || path.Clean(e.name) != e.name || strings.HasPrefix(e.name, "..") {
				t.Fatalf("kept %q (%d bytes)", e.name, len(e.data))
			}
		}
	})
}
