package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/pgembed/pgtest"
	"github.com/trueup-dev/trueup/internal/store"
)

// TestProcsReloadRemovesSource: two replicas configure source infra; the one holding its
// lease reloads a config without it (SIGHUP). Its syncer gives the lease up and the other
// replica, which still has the source, takes it at once (long before the lease could
// expire) and syncs the next commit; the reloaded replica keeps reconciling.
func TestProcsReloadRemovesSource(t *testing.T) {
	url := pgtest.NewDatabase(t, store.MigrateURL)
	w := procSetup(t, url, "0")
	w.leaseTTL = "30s"
	files, want := procManifests(6, 2, func(int) int { return 1 })
	w.commit(files, "6 databases")
	w.start(2)
	w.waitReady(60*time.Second, want)

	var holder *procReplica
	var holderName string
	w.eventually(30*time.Second, "one replica holding source:infra", func() (bool, string) {
		var l procReplicaList
		if err := w.getAny("/api/v1/replicas", &l); err != nil {
			return false, err.Error()
		}
		h := l.holders("source:infra")
		if len(h) != 1 {
			return false, fmt.Sprintf("holders %+v", h)
		}
		holder, holderName = w.byPID(h[0].PID), h[0].Name
		return holder != nil, fmt.Sprintf("holder %+v is not ours", h[0])
	})

	cfgPath := filepath.Join(w.dir, fmt.Sprintf("r%d", holder.idx), "trueup.yaml")
	raw, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["sources"] = []any{}
	raw, _ = json.MarshalIndent(cfg, "", "  ")
	if err := os.WriteFile(cfgPath, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	reloadedAt := time.Now()
	if err := holder.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	w.eventually(10*time.Second, "the other replica holding source:infra", func() (bool, string) {
		var l procReplicaList
		if err := w.getAny("/api/v1/replicas", &l); err != nil {
			return false, err.Error()
		}
		h := l.holders("source:infra")
		return len(h) == 1 && h[0].Name != holderName, fmt.Sprintf("holders %+v", h)
	})
	t.Logf("source:infra taken over %s after the reload", time.Since(reloadedAt).Round(time.Millisecond))
	if !strings.Contains(holder.logs.String(), "sources_removed=[infra]") {
		t.Errorf("the reload is not logged:\n%s", holder.logs.tail(8<<10))
	}

	ns, name := procName(0)
	w.commit(map[string]string{"manifests/dbs/part00.yaml": strings.Replace(files["manifests/dbs/part00.yaml"],
		dbResource(ns, name, 1), dbResource(ns, name, 2), 1)}, "grow "+name)
	want[ns+"/Database/"+name] = 2
	w.waitReady(60*time.Second, want)
	select {
	case <-holder.done:
		t.Fatalf("the reloaded replica exited: %v", holder.waitErr)
	default:
	}
}
