package notifier

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/config"
	"github.com/trueup-dev/trueup/internal/notifier/smtptest"
	"github.com/trueup-dev/trueup/internal/notify"
)

func TestMessageIDDomain(t *testing.T) {
	t.Parallel()
	for from, want := range map[string]string{
		"trueup@example.com":               "example.com",
		"Trueup <alerts@ops.example.org>":  "ops.example.org",
		"trueup":                           "trueup.invalid",
		"trueup@":                          "trueup.invalid",
		"bad@exa mple.com\r\nBcc: x@y.com": "trueup.invalid",
	} {
		if got := messageIDDomain(from); got != want {
			t.Errorf("messageIDDomain(%q) = %q, want %q", from, got, want)
		}
	}
}

func TestEmail(t *testing.T) {
	t.Parallel()
	f := smtptest.Start(t)
	host, port, _ := net.SplitHostPort(f.Addr())
	p, _ := strconv.Atoi(port)
	m := notify.Message{ID: "0123456789abcdef0123456789abcdef", Title: "Failed: production/DatabaseCluster/main", Text: "Failed: production/DatabaseCluster/main\nPhase: Failed"}
	insecure, err := NewProvider(config.NotifyProvider{Name: "mail", Type: "email", SMTP: &config.SMTP{Host: host, Port: p, Insecure: true},
		From: "trueup@example.com", To: []string{"oncall@example.com"}, Timeout: 5 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := insecure.Send(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(f.Messages(), "")
	for _, want := range []string{"MAIL FROM:<trueup@example.com>", "RCPT TO:<oncall@example.com>", "Subject: [trueup] Failed: production/DatabaseCluster/main", "Phase: Failed",
		"\r\nMessage-ID: <0123456789abcdef0123456789abcdef@example.com>\r\n", "\r\nX-Trueup-Delivery: 0123456789abcdef0123456789abcdef\r\n"} {
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
