package main

import (
	"bytes"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// gcTrace is the standard error of a server run with GODEBUG=gctrace=1: the runtime's line
// for each collection gives the live heap it left (the third of "A->B->C MB") and when it
// ran (seconds since the process started); every other line goes on to logs. The live heap
// over time tells which step of a sync holds the most, which the resident set (VmHWM) alone
// does not.
type gcTrace struct {
	logs *tailBuffer
	raw  io.Writer // when not nil, gets the whole standard error, trace lines included
	mu   sync.Mutex
	part []byte     // a line not ended yet
	runs []gcSample // in the order the collections ran
}

// gcSample is one collection: when it ran and the live heap it left.
type gcSample struct {
	at     float64 // seconds since the process started
	liveMB float64
}

// gcLine matches the runtime's trace of a collection (runtime/extern.go documents it), whole:
// the runtime writes a line a field at a time, so a log record written meanwhile may land
// inside it; such a line is not a sample, and goes to the logs as it is.
var gcLine = regexp.MustCompile(`^gc \d+ @([0-9.]+)s [^:]*: [0-9.+]+ ms clock, [0-9.+/]+ ms cpu, \d+->\d+->(\d+) MB, \d+ MB goal, \d+ MB stacks, \d+ MB globals, \d+ P( \(forced\))?\n$`)

func (g *gcTrace) Write(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.raw != nil {
		if _, err := g.raw.Write(p); err != nil {
			// A full disk does not stop the server (an error here would close its standard
			// error, and its next write would end it): the rest goes unkept.
			g.raw = nil
		}
	}
	g.part = append(g.part, p...)
	for {
		i := bytes.IndexByte(g.part, '\n')
		if i < 0 {
			break
		}
		line := g.part[:i+1]
		if m := gcLine.FindSubmatch(line); m != nil {
			at, _ := strconv.ParseFloat(string(m[1]), 64)
			live, _ := strconv.ParseFloat(string(m[2]), 64)
			g.runs = append(g.runs, gcSample{at: at, liveMB: live})
		} else if _, err := g.logs.Write(line); err != nil {
			return 0, err
		}
		g.part = append(g.part[:0], g.part[i+1:]...)
	}
	return len(p), nil
}

// mark is the number of collections so far: the samples before it are of what ran until
// now (peak's from and to).
func (g *gcTrace) mark() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.runs)
}

// peak is the largest live heap of the collections [from, to) (to < 0: up to the last) and
// when it was left; ok is false when there was none.
func (g *gcTrace) peak(from, to int) (s gcSample, ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if to < 0 || to > len(g.runs) {
		to = len(g.runs)
	}
	for _, r := range g.runs[min(from, to):to] {
		if !ok || r.liveMB > s.liveMB {
			s, ok = r, true
		}
	}
	return s, ok
}

// since lists the collections from the mark from on, each with its wall-clock time (the
// process started at started) and the live heap it left.
func (g *gcTrace) since(from int, started time.Time) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "%d", len(g.runs)-min(from, len(g.runs)))
	for _, r := range g.runs[min(from, len(g.runs)):] {
		fmt.Fprintf(&b, ", %s %.0f MB", started.Add(time.Duration(r.at*float64(time.Second))).UTC().Format("15:04:05.000"), r.liveMB)
	}
	return b.String()
}

func (s gcSample) String() string {
	return fmt.Sprintf("%.0f MB at %.1f s", s.liveMB, s.at)
}
