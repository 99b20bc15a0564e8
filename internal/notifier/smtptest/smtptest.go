// Package smtptest is a minimal SMTP server on loopback for tests of the email provider: no
// STARTTLS, no auth; it records each message's envelope and data.
package smtptest

import (
	"bufio"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// Server is a running fake SMTP server.
type Server struct {
	ln   net.Listener
	mu   sync.Mutex
	msgs []string
	wg   sync.WaitGroup
}

// Start listens on 127.0.0.1 until the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{ln: ln}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.wg.Add(1)
			go func() { defer s.wg.Done(); s.serve(c) }()
		}
	}()
	t.Cleanup(func() { ln.Close(); s.wg.Wait() })
	return s
}

// Addr is host:port.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Messages returns every accepted message: its MAIL and RCPT lines, then its data.
func (s *Server) Messages() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.msgs...)
}

func (s *Server) serve(c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	r := bufio.NewReader(c)
	say := func(line string) { _, _ = c.Write([]byte(line + "\r\n")) }
	say("220 smtptest ESMTP")
	var msg strings.Builder
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		cmd := strings.ToUpper(strings.TrimSpace(line))
		switch {
		case strings.HasPrefix(cmd, "EHLO"), strings.HasPrefix(cmd, "HELO"):
			say("250-smtptest")
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
			s.mu.Lock()
			s.msgs = append(s.msgs, msg.String())
			s.mu.Unlock()
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
