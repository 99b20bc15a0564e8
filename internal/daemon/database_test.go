package daemon

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/config"
)

// serve with no database URL logs the psql command for its private cluster, and the command,
// copied from the log line, connects.
func TestServeLogsPsqlCommand(t *testing.T) {
	t.Parallel()
	// MkdirTemp's folder is 0700: as root, the cluster's user must traverse it.
	dir, err := os.MkdirTemp("", "trueup-psql-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o711); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse([]byte("dataDir: "+dir+"\n"), ".", func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db, err := OpenDatabase(ctx, cfg, NewLogger(cfg, &logs))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	m := regexp.MustCompile(`(?m)msg="private PostgreSQL started; open it with the psql command" psql=("(?:[^"\\]|\\.)*")`).FindStringSubmatch(logs.String())
	if m == nil {
		t.Fatalf("no psql command in the log:\n%s", logs.String())
	}
	cmd, err := strconv.Unquote(m[1])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(cmd, "PGPASSWORD=$(cat "+dir+"/postgres/password) ") || !strings.HasSuffix(cmd, " -p 5432 -U trueup trueup") {
		t.Errorf("psql command %s", cmd)
	}
	out, err := exec.CommandContext(ctx, "sh", "-c", cmd+" -XAtc 'select current_database()'").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "trueup" {
		t.Fatalf("%s: %v\n%s", cmd, err, out)
	}
}
