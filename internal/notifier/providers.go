package notifier

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/mail"
	"net/smtp"
	"strconv"
	"strings"
	"time"

	"github.com/trueup-dev/trueup/internal/config"
	"github.com/trueup-dev/trueup/internal/httpwait"
	"github.com/trueup-dev/trueup/internal/notify"
)

// Provider delivers one message.
type Provider interface {
	Send(ctx context.Context, m notify.Message) error
}

// SendError is a provider's refusal; RetryAfter is what it asked to wait (0: not said).
type SendError struct {
	Status     int
	RetryAfter time.Duration
	Msg        string
}

func (e *SendError) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("provider answered %d: %s", e.Status, e.Msg)
	}
	return e.Msg
}

// retryAfterOf is the wait err asked for (0 when none).
func retryAfterOf(err error) time.Duration {
	var se *SendError
	if errors.As(err, &se) {
		return se.RetryAfter
	}
	return 0
}

// NewProvider builds a provider from its config; client is shared by the HTTP ones.
func NewProvider(p config.NotifyProvider, client *http.Client) (Provider, error) {
	switch p.Type {
	case "slack":
		return &httpProvider{url: p.URL, client: client, timeout: p.Timeout, body: slackBody}, nil
	case "msteams":
		return &httpProvider{url: p.URL, client: client, timeout: p.Timeout, body: teamsBody}, nil
	case "webhook":
		return &httpProvider{url: p.URL, client: client, timeout: p.Timeout, body: webhookBody, secret: []byte(p.Secret)}, nil
	case "email":
		if p.SMTP == nil {
			return nil, fmt.Errorf("provider %s: smtp is required", p.Name)
		}
		return &emailProvider{smtp: *p.SMTP, from: p.From, to: p.To, timeout: p.Timeout}, nil
	}
	return nil, fmt.Errorf("provider %s: unknown type %q", p.Name, p.Type)
}

// httpProvider posts a JSON body.
type httpProvider struct {
	url     string
	client  *http.Client
	timeout time.Duration
	secret  []byte
	body    func(notify.Message) any
}

// signatureHeader is the http action's scheme: sha256=<hex HMAC-SHA256 of the body>.
const signatureHeader = "X-Trueup-Signature-256"

// DeliveryHeader carries the message's delivery id (notify.Batch.DeliveryID) on every HTTP
// provider's request and in every email: the same on every retry, so that a receiver drops
// a message it already has.
const DeliveryHeader = "X-Trueup-Delivery"

func (p *httpProvider) Send(ctx context.Context, m notify.Message) error {
	body, err := json.Marshal(p.body(m))
	if err != nil {
		return err
	}
	if p.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url, bytes.NewReader(body))
	if err != nil {
		return &SendError{Msg: "build request"} // the URL is a credential: not quoted
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "trueup-notifier")
	req.Header.Set(DeliveryHeader, m.ID)
	if len(p.secret) > 0 {
		req.Header.Set(signatureHeader, Sign(p.secret, body))
	}
	resp, err := p.client.Do(req)
	if err != nil {
		var ue interface{ Unwrap() error }
		if errors.As(err, &ue) {
			err = ue.Unwrap() // drop the URL that *url.Error quotes
		}
		return &SendError{Msg: err.Error()}
	}
	defer resp.Body.Close()
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 == 2 {
		return nil
	}
	return &SendError{Status: resp.StatusCode, RetryAfter: retryAfter(resp.Header, time.Now()),
		Msg: strings.TrimSpace(string(snippet))}
}

// Sign is the X-Trueup-Signature-256 value of body.
func Sign(secret, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// retryAfter is how long the provider asks to wait (0 when it does not say).
func retryAfter(h http.Header, now time.Time) time.Duration {
	d, _ := httpwait.RetryAfter(h, now)
	return d
}

func slackBody(m notify.Message) any {
	return map[string]any{"text": m.Text}
}

func teamsBody(m notify.Message) any {
	card := map[string]any{
		"@type": "MessageCard", "@context": "https://schema.org/extensions",
		"summary": m.Title, "title": m.Title, "text": strings.ReplaceAll(m.Text, "\n", "\n\n"),
		"themeColor": color(m.Event),
	}
	if m.URL != "" {
		card["potentialAction"] = []any{map[string]any{"@type": "OpenUri", "name": "Open in trueup",
			"targets": []any{map[string]string{"os": "default", "uri": m.URL}}}}
	}
	return card
}

func color(event string) string {
	switch event {
	case notify.Recovered, notify.Approved:
		return "2EB886"
	case notify.Drifted, notify.PruneSkipped, notify.Deleted, notify.Abandoned, notify.ApprovalRequired:
		return "DAA038"
	}
	return "A30200"
}

// WebhookPayload is the webhook provider's body.
type WebhookPayload struct {
	ID        string          `json:"id"` // the delivery id, as in the X-Trueup-Delivery header
	Event     string          `json:"event"`
	Title     string          `json:"title"`
	Rule      string          `json:"rule"`
	Resource  WebhookResource `json:"resource"`
	Source    string          `json:"source,omitempty"`
	Phase     string          `json:"phase,omitempty"`
	Message   string          `json:"message,omitempty"`
	Revision  string          `json:"revision,omitempty"`
	URL       string          `json:"url,omitempty"`
	Count     int             `json:"count"`
	Resources []string        `json:"resources,omitempty"`
	Text      string          `json:"text"`
}

// WebhookResource names the resource (or, grouped, the first one).
type WebhookResource struct {
	Namespace string `json:"namespace,omitempty"`
	Kind      string `json:"kind"`
	Name      string `json:"name"`
}

func webhookBody(m notify.Message) any {
	return WebhookPayload{ID: m.ID, Event: m.Event, Title: m.Title, Rule: m.Rule, Resource: WebhookResource{Namespace: m.Namespace, Kind: m.Kind, Name: m.Name},
		Source: m.Source, Phase: m.Phase, Message: m.Message, Revision: m.Revision, URL: m.URL, Count: m.Count, Resources: m.Resources, Text: m.Text}
}

// emailProvider sends over SMTP, with STARTTLS unless the server is marked insecure.
type emailProvider struct {
	smtp    config.SMTP
	from    string
	to      []string
	timeout time.Duration
}

func (p *emailProvider) Send(ctx context.Context, m notify.Message) error {
	if p.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.timeout)
		defer cancel()
	}
	addr := net.JoinHostPort(p.smtp.Host, strconv.Itoa(p.smtp.Port))
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return &SendError{Msg: fmt.Sprintf("smtp %s: %v", addr, err)}
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	c, err := smtp.NewClient(conn, p.smtp.Host)
	if err != nil {
		conn.Close()
		return &SendError{Msg: fmt.Sprintf("smtp %s: %v", addr, err)}
	}
	defer c.Close()
	if ok, _ := c.Extension("STARTTLS"); ok {
		if err := c.StartTLS(&tls.Config{ServerName: p.smtp.Host, MinVersion: tls.VersionTLS12}); err != nil {
			return &SendError{Msg: fmt.Sprintf("smtp %s: starttls: %v", addr, err)}
		}
	} else if !p.smtp.Insecure {
		return &SendError{Msg: fmt.Sprintf("smtp %s: the server offers no STARTTLS", addr)}
	}
	if p.smtp.Username != "" {
		if err := c.Auth(smtp.PlainAuth("", p.smtp.Username, p.smtp.Password, p.smtp.Host)); err != nil {
			return &SendError{Msg: fmt.Sprintf("smtp %s: auth: %v", addr, err)}
		}
	}
	if err := c.Mail(p.from); err != nil {
		return &SendError{Msg: fmt.Sprintf("smtp %s: MAIL: %v", addr, err)}
	}
	for _, to := range p.to {
		if err := c.Rcpt(to); err != nil {
			return &SendError{Msg: fmt.Sprintf("smtp %s: RCPT: %v", addr, err)}
		}
	}
	w, err := c.Data()
	if err != nil {
		return &SendError{Msg: fmt.Sprintf("smtp %s: DATA: %v", addr, err)}
	}
	if _, err := w.Write(emailBody(p.from, p.to, m, time.Now())); err != nil {
		return &SendError{Msg: fmt.Sprintf("smtp %s: write: %v", addr, err)}
	}
	if err := w.Close(); err != nil {
		return &SendError{Msg: fmt.Sprintf("smtp %s: %v", addr, err)}
	}
	// The server accepted the message at the end of DATA: a failed QUIT must not send it
	// again.
	_ = c.Quit()
	return nil
}

func emailBody(from string, to []string, m notify.Message, now time.Time) []byte {
	var b bytes.Buffer
	subject := strings.NewReplacer("\r", " ", "\n", " ").Replace("[trueup] " + m.Title)
	fmt.Fprintf(&b, "From: %s\r\nTo: %s\r\nSubject: %s\r\nDate: %s\r\nMessage-ID: <%s@%s>\r\n%s: %s\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n",
		from, strings.Join(to, ", "), subject, now.Format(time.RFC1123Z), m.ID, messageIDDomain(from), DeliveryHeader, m.ID)
	b.WriteString(strings.ReplaceAll(m.Text, "\n", "\r\n"))
	b.WriteString("\r\n")
	return b.Bytes()
}

// messageIDDomain is the right side of the Message-ID: the sender's domain, so that the id
// is unique beyond trueup's own ids (RFC 5322 3.6.4).
func messageIDDomain(from string) string {
	a, err := mail.ParseAddress(from)
	if err != nil {
		return "trueup.invalid"
	}
	if i := strings.LastIndexByte(a.Address, '@'); i >= 0 && i < len(a.Address)-1 && !strings.ContainsAny(a.Address[i+1:], " <>[]\r\n") {
		return a.Address[i+1:]
	}
	return "trueup.invalid"
}
