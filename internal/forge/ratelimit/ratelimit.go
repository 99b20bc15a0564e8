// Package ratelimit holds the rate-limit pauses of forge API credentials. GitHub and GitLab
// count requests per credential (a token, an App installation) and host, so a limit that one
// client meets holds for every client of the same host and credential: the actions, the
// commit statuses and the preview comments of one token wait for the same reset instead of
// each earning its own 429. Pauses live in a Registry: the clients of a process share
// Shared's, whose pauses live as long as the process (one per host and credential ever used,
// which the configuration bounds); a client configured with a registry of its own shares its
// limits with the clients of that registry alone (tests, an embedding that keeps apart what
// it runs).
package ratelimit

import (
	"crypto/sha256"
	"sync"
	"time"
)

// Pause is the rate-limit pause of one credential at one host. The zero value is a pause
// of its own, shared with nobody. It is safe for concurrent use.
type Pause struct {
	mu    sync.Mutex
	until time.Time
}

// Until reports whether calls are paused at now, and until when.
func (p *Pause) Until(now time.Time) (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !now.Before(p.until) {
		return time.Time{}, false
	}
	return p.until, true
}

// Extend pauses calls until t; an earlier t than the pause's end changes nothing.
func (p *Pause) Extend(t time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if t.After(p.until) {
		p.until = t
	}
}

// Spent pauses calls until reset when the forge reports no request left (remaining 0), so
// that the next call does not earn a refusal.
func (p *Pause) Spent(remaining int64, reset, now time.Time) {
	if remaining == 0 && reset.After(now) {
		p.Extend(reset)
	}
}

type key struct {
	origin     string
	credential [sha256.Size]byte
}

// Registry holds the pauses of the credentials of its clients. The zero value is an empty
// registry, ready for use. It is safe for concurrent use.
type Registry struct {
	mu     sync.Mutex
	pauses map[key]*Pause
}

var shared Registry

// Shared is the process's registry, which clients use unless configured with another.
func Shared() *Registry { return &shared }

// For returns the pause shared by every client of credential at origin (scheme://host[:port]
// of the API) in r. An empty credential gets a pause of its own. The credential is kept only
// as its SHA-256.
func (r *Registry) For(origin, credential string) *Pause {
	if credential == "" {
		return &Pause{}
	}
	k := key{origin: origin, credential: sha256.Sum256([]byte(credential))}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pauses == nil {
		r.pauses = map[key]*Pause{}
	}
	p := r.pauses[k]
	if p == nil {
		p = &Pause{}
		r.pauses[k] = p
	}
	return p
}
