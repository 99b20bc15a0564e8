package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/store"
)

// A test client of GET /api/v1/watch that parses the stream as a browser would.

// sseBlock is one block of an event stream; ID is -1 when it had no id field.
type sseBlock struct {
	ID    int64
	Event string
	Data  string
	Retry string
}

// sseClient reads one stream in the background into a roomy channel, so that it never makes
// the server wait.
type sseClient struct {
	blocks chan sseBlock
	ended  chan error // the stream's end (nil: EOF)
	cancel context.CancelFunc
	pos    int64 // the last id seen; owned by the test goroutine
}

func (e *watchEnv) watch(t *testing.T, query string, header http.Header) *sseClient {
	t.Helper()
	c, resp, err := e.dial(t, query, header)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("watch?%s: %d %s", query, resp.StatusCode, body)
	}
	for k, v := range map[string]string{"Content-Type": "text/event-stream", "Cache-Control": "no-store", "X-Accel-Buffering": "no"} {
		if got := resp.Header.Get(k); got != v {
			t.Errorf("watch?%s: %s %q, want %q", query, k, got, v)
		}
	}
	go c.read(resp.Body)
	if b := c.next(t, 10*time.Second, false); b.Retry != "2000" {
		t.Fatalf("watch?%s: first block %+v, want retry: 2000", query, b)
	}
	return c
}

// dial opens a stream; it may run on any goroutine.
func (e *watchEnv) dial(t *testing.T, query string, header http.Header) (*sseClient, *http.Response, error) {
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.url+"/api/v1/watch?"+query, nil)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	c := &sseClient{blocks: make(chan sseBlock, 1<<16), ended: make(chan error, 1), cancel: cancel, pos: -1}
	t.Cleanup(func() { cancel(); resp.Body.Close() })
	return c, resp, nil
}

func (c *sseClient) read(body io.Reader) {
	r := bufio.NewReader(body)
	b := sseBlock{ID: -1}
	fields := 0
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			c.ended <- err
			close(c.blocks)
			return
		}
		line = strings.TrimSuffix(line, "\n")
		if line == "" {
			if fields > 0 {
				c.blocks <- b
			}
			b, fields = sseBlock{ID: -1}, 0
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue // comment (heartbeat)
		}
		name, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		fields++
		switch name {
		case "id":
			b.ID, _ = strconv.ParseInt(value, 10, 64)
		case "event":
			b.Event = value
		case "data":
			b.Data = value
		case "retry":
			b.Retry = value
		}
	}
}

// next returns the next block (with events only, the next block with an event), failing the
// test when none comes in time.
func (c *sseClient) next(t *testing.T, d time.Duration, eventsOnly bool) sseBlock {
	t.Helper()
	timeout := time.After(d)
	for {
		select {
		case b, ok := <-c.blocks:
			if !ok {
				t.Fatalf("stream ended (%v) while waiting for a block", <-c.ended)
			}
			if b.ID >= 0 {
				c.pos = b.ID
			}
			if !eventsOnly || (b.Event != "" && b.Event != "position") {
				return b
			}
		case <-timeout:
			t.Fatalf("no block in %s (position %d)", d, c.pos)
		}
	}
}

// changes reads n change events, checking that each block's id and event name agree with its
// data.
func (c *sseClient) changes(t *testing.T, n int, d time.Duration) []store.Change {
	t.Helper()
	deadline := time.Now().Add(d)
	out := make([]store.Change, 0, n)
	for len(out) < n {
		b := c.next(t, time.Until(deadline), true)
		var ch store.Change
		if err := json.Unmarshal([]byte(b.Data), &ch); err != nil {
			t.Fatalf("event %+v: %v", b, err)
		}
		if b.Event != ch.Object || b.ID != ch.ID {
			t.Fatalf("block id %d event %q carries change %+v", b.ID, b.Event, ch)
		}
		out = append(out, ch)
	}
	return out
}

// quietUntil reads blocks until the client's position reaches id, failing on any event: the
// client was told of everything up to id and nothing of it matched.
func (c *sseClient) quietUntil(t *testing.T, id int64, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for c.pos < id {
		if b := c.next(t, time.Until(deadline), false); b.Event != "position" {
			t.Fatalf("unexpected event %+v while waiting for position %d", b, id)
		}
	}
}

func ids(cs []store.Change) []int64 {
	out := make([]int64, len(cs))
	for i, c := range cs {
		out[i] = c.ID
	}
	return out
}

func sameIDs(t *testing.T, what string, got, want []store.Change) {
	t.Helper()
	g, w := ids(got), ids(want)
	if fmt.Sprint(g) != fmt.Sprint(w) {
		t.Fatalf("%s: ids\n got %v\nwant %v", what, g, w)
	}
}
