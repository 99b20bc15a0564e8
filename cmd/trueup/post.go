package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
)

// post sends an operator command: POST path?query with body as JSON (nil: no body), and
// decodes the JSON answer (any 2xx) into v. The API's {"error": …} becomes the error's text.
func (c *client) post(ctx context.Context, path string, query url.Values, body, v any) error {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	target := c.base.String() + path // path is escaped already
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "trueup-cli/"+version)
	resp, err := c.http.Do(req)
	if err != nil {
		return c.unreachable(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(b, &e) == nil && e.Error != "" {
			return &apiError{status: resp.StatusCode, msg: e.Error}
		}
		return fmt.Errorf("POST %s: %s (is %s a trueup API?)", path, resp.Status, c.base)
	}
	if v == nil {
		return nil
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("POST %s: unexpected answer (is %s a trueup API?): %w", path, c.base, err)
	}
	return nil
}

// commandAnswer is the API's answer to an operator command.
type commandAnswer struct {
	Action      string `json:"action"`
	Actor       string `json:"actor"`
	RequestedAt string `json:"requestedAt"`
	Source      string `json:"source"`
	Resources   []struct {
		Namespace string `json:"namespace"`
		Kind      string `json:"kind"`
		Name      string `json:"name"`
	} `json:"resources"`
}
