package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"testing"
)

// FuzzParsePush decodes arbitrary push bodies under each content type and provider. It must
// not panic; a rejection must not echo the body (webhook bodies stay out of logs); the
// commit it yields is empty or 7 to 64 lowercase hex digits.
func FuzzParsePush(f *testing.F) {
	f.Add("application/json", `{"ref":"refs/heads/main","after":"3f786850e387550fdab836ed7e6dc881de23001b","repository":{"full_name":"acme/infra"}}`, providerGitHub, "main")
	f.Add("application/json", `{"object_kind":"push","ref":"refs/heads/main","checkout_sha":null,"after":"0000000000000000000000000000000000000000"}`, providerGitLab, "main")
	f.Add("application/json; charset=utf-8", `{"ref":"refs/tags/v1","after":"ABCDEF1"}`, providerGitea, "")
	f.Add("application/x-www-form-urlencoded", `payload=%7B%22ref%22%3A%22refs%2Fheads%2Fmain%22%2C%22after%22%3A%22abc1234%22%7D`, providerGitHub, "main")
	f.Add("application/x-www-form-urlencoded", `payload=%zz`, providerForgejo, "main")
	f.Add("text/plain", `not json`, providerGeneric, "dev")
	f.Add("", ``, providerGeneric, "")
	f.Fuzz(func(t *testing.T, contentType, body, provider, branch string) {
		h := http.Header{}
		h.Set("Content-Type", contentType)
		p, err := parsePush(h, []byte(body), provider)
		if err != nil {
			if provider == providerGeneric {
				t.Fatalf("generic delivery rejected: %v", err)
			}
			if len(body) > 8 && strings.Contains(err.Error(), body) {
				t.Fatalf("error echoes the body: %v", err)
			}
			return
		}
		c := p.commit()
		if c != "" {
			if len(c) < 7 || len(c) > 64 || strings.ToLower(c) != c {
				t.Fatalf("commit %q", c)
			}
			if _, err := hex.DecodeString(c + c); err != nil {
				t.Fatalf("commit %q is not hex", c)
			}
		}
		if p.Ref == "" && !p.tracked(branch) {
			t.Fatalf("a push without ref must count for branch %q", branch)
		}
		_ = p.tracked(branch)
	})
}

// FuzzAuthenticate checks the signature and token paths with arbitrary headers, bodies and
// secrets. It must not panic; an empty secret refuses everything; the right HMAC in any
// signature header, and the right token, are accepted; a signature that is not the body's
// HMAC is refused.
func FuzzAuthenticate(f *testing.F) {
	f.Add(0, "sha256=5d41402abc4b2a76b9719d911017c592", []byte(`{"ref":"refs/heads/main"}`), "s3cret", "Bearer s3cret")
	f.Add(2, "5d41402abc4b2a76b9719d911017c592", []byte(`{}`), "hook", "")
	f.Add(1, "sha256=", []byte(``), "", "bearer ")
	f.Add(3, " ZZ ", []byte("payload=x"), "k", "Basic abc")
	f.Fuzz(func(t *testing.T, which int, sig string, body []byte, secret, authorization string) {
		hh := hmacHeaders[uint(which)%uint(len(hmacHeaders))]
		h := http.Header{}
		h.Set(hh.name, sig)
		h.Set("Authorization", authorization)
		_ = classify(h)
		ok := signed(h) && authenticateBody(h, body, secret)
		if secret == "" && (ok || authenticateHeader(h, secret)) {
			t.Fatal("an empty secret accepted a delivery")
		}
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write(body)
		want := hex.EncodeToString(mac.Sum(nil))
		if ok {
			s := strings.TrimSpace(strings.TrimPrefix(h.Get(hh.name), hh.prefix))
			if !strings.EqualFold(s, want) {
				t.Fatalf("signature %q accepted, want %q", sig, want)
			}
		}
		good := http.Header{}
		good.Set(hh.name, hh.prefix+want)
		if secret != "" && !authenticateBody(good, body, secret) {
			t.Fatalf("the body's own HMAC refused in %s", hh.name)
		}
		tok := http.Header{}
		tok.Set("Authorization", "bearer "+secret)
		if secret != "" && strings.TrimSpace(secret) == secret && !strings.ContainsAny(secret, "\r\n") && !authenticateHeader(tok, secret) {
			t.Fatalf("the right bearer token refused")
		}
	})
}

// FuzzRegistryPush decodes arbitrary registry notifications: no panic, no echo of the body,
// and a match is always of the repository (and the tag, when one is followed).
func FuzzRegistryPush(f *testing.F) {
	f.Add(`{"events":[{"action":"push","target":{"repository":"acme/config","tag":"v1"}}]}`, "v1")
	f.Add(`{"type":"PUSH_ARTIFACT","event_data":{"repository":{"repo_full_name":"acme/config"},"resources":[{"tag":"v2"}]}}`, "")
	f.Add(`{"events":null,"type":7}`, "v1")
	f.Fuzz(func(t *testing.T, body, tag string) {
		p, err := parseRegistryPush([]byte(body))
		if err != nil {
			if len(body) > 8 && strings.Contains(err.Error(), body) {
				t.Fatalf("error echoes the body: %v", err)
			}
			return
		}
		if got, ok := p.matches("acme/config", tag); ok && tag != "" && got != tag {
			t.Fatalf("matched tag %q, following %q", got, tag)
		}
	})
}
