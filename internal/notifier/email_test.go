package notifier

import (
	"bufio"
	"context"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/config"
	"github.com/trueup-dev/trueup/internal/notify"
)

// fakeSMTP is a minimal SMTP server on loopback (no STARTTLS): it records each message's
// envelope and data.
type fakeSMTP struct {
	ln   net.Listener
	mu   sync.Mutex
	msgs []string
	wg   sync.WaitGroup
}

func startSMTP(t *testing.T) *fakeSMTP {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeSMTP{ln: ln}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			f.wg.Add(1)
			go func() { defer f.wg.Done(); f.serve(c) }()
		}
	}()
	t.Cleanup(func() { ln.Close(); f.wg.Wait() })
	return f
}

func (f *fakeSMTP) serve(c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(c)
	say := func(s string) { _, _ = c.Write([]byte(s + "\r\n")) }
	say("220 fake ESMTP")
	var msg strings.Builder
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		cmd := strings.ToUpper(strings.TrimSpace(line))
		switch {
		case strings.HasPrefix(cmd, "EHLO"), strings.HasPrefix(cmd, "HELO"):
			say("250-fake")
			say("250 8BITMIME")
		case strings.HasPrefix(cmd, "MAIL"), strings.HasPrefix(cmd, "RCPT"):
			msg.WriteString(strings.TrimSpace(line) + "\n")
			say("250 ok")
		case cmd == "DATA":
			say("354 go on")
			for {
				l, err := r.ReadString('\n')
				if err != nil {
					return
				}
				if l == ".\r\n" {
					break
				}
				msg.WriteString(l)
			}
			f.mu.Lock()
			f.msgs = append(f.msgs, msg.String())
			f.mu.Unlock()
			msg.Reset()
			say("250 queued")
		case cmd == "QUIT":
			say("221 bye")
			return
		default:
			say("250 ok")
		}
	}
}

func TestEmail(t *testing.T) {
	t.Parallel()
	f := startSMTP(t)
	host, port, _ := net.SplitHostPort(f.ln.Addr().String())
	p, _ := strconv.Atoi(port)
	m := notify.Message{Title: "Failed: production/DatabaseCluster/main", Text: "Failed: production/DatabaseCluster/main\nPhase: Failed"}
	insecure, err := NewProvider(config.NotifyProvider{Name: "mail", Type: "email", SMTP: &config.SMTP{Host: host, Port: p, Insecure: true},
		From: "trueup@example.com", To: []string{"oncall@example.com"}, Timeout: 5 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := insecure.Send(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	got := strings.Join(f.msgs, "")
	f.mu.Unlock()
	for _, want := range []string{"MAIL FROM:<trueup@example.com>", "RCPT TO:<oncall@example.com>", "Subject: [trueup] Failed: production/DatabaseCluster/main", "Phase: Failed"} {
		if !strings.Contains(got, want) {
			t.Errorf("message lacks %q:\n%s", want, got)
		}
	}
	// Without insecure, a server that offers no STARTTLS gets nothing.
	strict, _ := NewProvider(config.NotifyProvider{Name: "mail", Type: "email", SMTP: &config.SMTP{Host: host, Port: p},
		From: "trueup@example.com", To: []string{"oncall@example.com"}}, nil)
	if err := strict.Send(context.Background(), m); err == nil || !strings.Contains(err.Error(), "STARTTLS") {
		t.Fatalf("send without STARTTLS: %v", err)
	}
}
