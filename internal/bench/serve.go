package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// serveFigures runs the real binary holding 100,000 resources (a folder source, the noop
// action) and measures its resident memory and the API's list latency.
func (b *bench) serveFigures(ctx context.Context) error {
	const n = 100000
	bin := filepath.Join(b.dir, "trueup")
	build := exec.Command("go", "build", "-o", bin, "./cmd/trueup")
	build.Dir = moduleRoot()
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("build: %v: %s", err, out)
	}
	repo := filepath.Join(b.dir, "repo100k")
	if err := writeFiles(repo, widgets(n, 500, 0)); err != nil {
		return err
	}
	st, dbURL, err := b.freshStore(ctx, 2)
	if err != nil {
		return err
	}
	defer st.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	addr := ln.Addr().String()
	ln.Close()
	cfg := filepath.Join(b.dir, "serve.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`dataDir: %s
server: {listen: "%s"}
sources:
  - name: bench
    dir: {path: %s}
actions:
  - {name: act, type: noop}
reconcile: {workers: 32, resyncInterval: 1h}
log: {level: warn}
`, filepath.Join(b.dir, "serve-data"), addr, repo)), 0o644); err != nil {
		return err
	}
	cmd := exec.Command(bin, "serve", "--config", cfg)
	cmd.Env = append(os.Environ(), "TRUEUP_DATABASE_URL="+dbURL)
	var logs strings.Builder
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
		}
	}()
	start := time.Now()
	if err := waitReady(ctx, st, n, 10*time.Minute); err != nil {
		return fmt.Errorf("%w\n%s", err, logs.String())
	}
	fmt.Fprintf(os.Stderr, "serve: %d resources Ready in %s\n", n, time.Since(start).Round(time.Millisecond))
	// VmHWM is the process's peak resident set since it started: the parse, the apply and the
	// first reconciles of all 100,000 resources. Containers are sized by it, not by VmRSS.
	peak, err := procStatusMB(cmd.Process.Pid, "VmHWM")
	if err != nil {
		return err
	}
	rss, err := procStatusMB(cmd.Process.Pid, "VmRSS")
	if err != nil {
		return err
	}
	record("rss_100k", rss, "MB", "≤ 150", atMost(150))
	if err := recordRSSSplit(cmd.Process.Pid, "rss_100k"); err != nil {
		return err
	}
	record("rss_peak_100k", peak, "MB", "≤ 150", atMost(150))
	// Latency is measured in steady state: after the bulk load has been vacuumed (autovacuum
	// would do it within a minute; waiting for it makes the figures noisy, not truer).
	for _, q := range []string{"VACUUM ANALYZE resources", "VACUUM ANALYZE resource_phases"} {
		if _, err := st.Pool().Exec(ctx, q); err != nil {
			return err
		}
	}

	client := &http.Client{Timeout: 10 * time.Second}
	get := func(path string) (time.Duration, []byte, error) {
		t := time.Now()
		resp, err := client.Get("http://" + addr + path)
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		var body json.RawMessage
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			return 0, nil, err
		}
		if resp.StatusCode != 200 {
			return 0, nil, fmt.Errorf("GET %s: %d", path, resp.StatusCode)
		}
		return time.Since(t), body, nil
	}
	var lat []time.Duration
	cont := ""
	queries := []string{"", "&namespace=ns07", "&labelSelector=team%3Dt3", "&kind=widget&phase=Ready"}
	for i := 0; i < 400; i++ {
		q := "/api/v1/resources?limit=100" + queries[i%len(queries)]
		if i%len(queries) == 0 && cont != "" {
			q += "&continue=" + url.QueryEscape(cont)
		}
		d, body, err := get(q)
		if err != nil {
			return err
		}
		if i%len(queries) == 0 {
			var page struct{ Continue string }
			_ = json.Unmarshal(body, &page)
			cont = page.Continue
		}
		lat = append(lat, d)
	}
	record("api_list_p99_100k", ms(percentile(lat, 0.99)), "ms", "≤ 10", atMost(10))

	// Dashboard pages: the overview and the resource list (first pages, filters, a search).
	var dash []time.Duration
	pages := []string{"/", "/resources", "/resources?namespace=ns07", "/resources?phase=Ready&kind=Widget", "/resources?q=w0123"}
	for i := 0; i < 200; i++ {
		t := time.Now()
		resp, err := client.Get("http://" + addr + pages[i%len(pages)])
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("GET %s: %d", pages[i%len(pages)], resp.StatusCode)
		}
		dash = append(dash, time.Since(t))
	}
	record("dashboard_list_p99_100k", ms(percentile(dash, 0.99)), "ms", "≤ 50", atMost(50))
	return nil
}

// recordRSSSplit records the resident set of pid as its two parts, name_anon (the memory
// the process allocated: heap, stacks, the runtime's) and name_file (the pages of files it
// maps: the binary's code and read-only data, all resident once run).
func recordRSSSplit(pid int, name string) error {
	for _, part := range []struct{ field, suffix string }{{"RssAnon", "_anon"}, {"RssFile", "_file"}} {
		v, err := procStatusMB(pid, part.field)
		if err != nil {
			return err
		}
		record(name+part.suffix, v, "MB", "informational", nil)
	}
	return nil
}

// procStatusMB reads a memory field (VmRSS, VmHWM) of /proc/PID/status in MB.
func procStatusMB(pid int, field string) (float64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, err := strconv.Atoi(strings.Fields(v)[0])
			return float64(kb) / 1024, err
		}
	}
	return 0, fmt.Errorf("no %s for pid %d", field, pid)
}

func moduleRoot() string {
	dir, _ := os.Getwd()
	for d := dir; d != "/"; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
	}
	return dir
}
