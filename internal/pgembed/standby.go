package pgembed

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
)

// StartStandby makes a streaming standby of the running cluster c in the folder dir and
// starts it: pg_basebackup -R copies c's data and writes the standby's connection back to c,
// so the standby replays c's WAL as it is written and answers reads only. It shares c's
// superuser password and durability; stop it with Stop.
func (c *Cluster) StartStandby(ctx context.Context, dir string) (*Cluster, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("start standby: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("start standby: %w", err)
	}
	sb := &Cluster{dir: dir, acc: c.acc}
	if err := sb.writePassword(c.password); err != nil {
		return nil, fmt.Errorf("start standby: %w", err)
	}
	// As root the copy is root's; Start hands the data folder to the server's user.
	cmd := exec.CommandContext(ctx, filepath.Join(c.binDir, "pg_basebackup"), "-D", filepath.Join(dir, "data"),
		"-R", "-X", "stream", "-c", "fast", "-h", c.socketDir, "-p", strconv.Itoa(port), "-U", superuser)
	cmd.Env = append(c.env(), "PGPASSWORD="+c.password)
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("start standby: pg_basebackup: %w: %s", err, out)
	}
	return Start(ctx, Options{Dir: dir, Fast: c.fast, Logger: c.log, Database: "postgres"})
}
