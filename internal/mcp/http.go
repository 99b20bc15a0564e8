package mcp

import (
	"context"
	"log/slog"
	"net/http"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

type serverKey struct{}

// Handler serves the streamable HTTP transport, stateless: each POST is one exchange, answered
// by a server whose tools call backend(r), the API as the request's caller sees it. No session
// outlives a request, so any replica answers any request, and credentials are those of each
// request. DNS-rebinding and cross-origin protection are the caller's (internal/server checks
// Host and Origin on every request, /mcp included).
func Handler(backend func(r *http.Request) Backend, o Options, logger *slog.Logger) http.Handler {
	h := sdk.NewStreamableHTTPHandler(func(r *http.Request) *sdk.Server {
		s, _ := r.Context().Value(serverKey{}).(*sdk.Server)
		return s
	}, &sdk.StreamableHTTPOptions{Stateless: true, JSONResponse: true, Logger: logger, DisableLocalhostProtection: true})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := NewServer(backend(r), o)
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), serverKey{}, s)))
	})
}
