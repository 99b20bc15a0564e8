package mcp

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

type backendKey struct{}

// requestBackend is the Backend that Handler put in the context of the request a tool call
// came with.
type requestBackend struct{}

var errNoBackend = errors.New("no API for this request")

func (requestBackend) Get(ctx context.Context, path string, q url.Values, v any) error {
	b, ok := ctx.Value(backendKey{}).(Backend)
	if !ok {
		return errNoBackend
	}
	return b.Get(ctx, path, q, v)
}

func (requestBackend) Post(ctx context.Context, path string, q url.Values, body, v any) error {
	b, ok := ctx.Value(backendKey{}).(Backend)
	if !ok {
		return errNoBackend
	}
	return b.Post(ctx, path, q, body, v)
}

// MaxRequestBody is the largest request body Handler reads, the API's limit for a command's
// body; a larger one is answered 413.
const MaxRequestBody = 64 << 10

// Handler serves the streamable HTTP transport, stateless: each POST is one exchange, whose
// tools call backend(r), the API as the request's caller sees it. No session outlives a
// request, so any replica answers any request, and credentials are those of each request.
// One server answers every request; a tool finds the request's Backend in its context.
// DNS-rebinding and cross-origin protection are the caller's (internal/server checks Host
// and Origin on every request, /mcp included).
func Handler(backend func(r *http.Request) Backend, o Options, logger *slog.Logger) http.Handler {
	s := NewServer(requestBackend{}, o)
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s },
		&sdk.StreamableHTTPOptions{Stateless: true, JSONResponse: true, Logger: logger, DisableLocalhostProtection: true,
			MaxRequestBodyBytes: MaxRequestBody})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), backendKey{}, backend(r))))
	})
}
