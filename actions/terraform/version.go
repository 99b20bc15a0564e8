package terraform

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
)

// versions caches what `version -json` says of a binary, keyed by its path, size and
// modification time: an upgrade in place changes those, and then the version, which is in
// the init stamp, so that working copies are initialised again by the new binary.
type versions struct {
	mu sync.Mutex
	m  map[string]string
}

// version is the binary's version, run once per binary file.
func (c *call) version(ctx context.Context) (string, error) {
	fi, err := os.Stat(c.binary)
	if err != nil {
		return "", fmt.Errorf("binary: %w", err)
	}
	key := fmt.Sprintf("%s\x00%d\x00%d", c.binary, fi.Size(), fi.ModTime().UnixNano())
	v := &c.a.versions
	v.mu.Lock()
	got, ok := v.m[key]
	v.mu.Unlock()
	if ok {
		return got, nil
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	res, err := run(ctx, runSpec{binary: c.binary, dir: c.dir, env: c.env, args: []string{"version", "-json"},
		scrub: c.scrub, okCodes: []int{0}})
	if err != nil {
		return "", err
	}
	var out struct {
		Terraform string `json:"terraform_version"`
	}
	got = strings.TrimSpace(res.stdout)
	if json.Unmarshal([]byte(res.stdout), &out) == nil && out.Terraform != "" {
		got = out.Terraform
	} else {
		got = digest(got) // not the JSON of terraform or tofu: its output stands for the version
	}
	v.mu.Lock()
	if v.m == nil {
		v.m = map[string]string{}
	}
	v.m[key] = got
	v.mu.Unlock()
	return got, nil
}
