package server

import (
	"cmp"
	"context"
	"io"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strconv"

	"github.com/trueup-dev/trueup/internal/apiclient"
	"github.com/trueup-dev/trueup/internal/auth"
	"github.com/trueup-dev/trueup/internal/mcp"
)

// The Model Context Protocol at /mcp (internal/mcp, DESIGN §9 "MCP"). Its tools call the API
// in process, below authentication: the API handler (limiter, timeout, routes) with the
// identity /mcp's request was authenticated as, so what a tool sees, may do and shows is
// exactly what the API answers that caller — one authorization path. /mcp's own work (JSON-RPC,
// schemas, listing tools) runs under a limiter of its own, as many at once as the API's, with
// the same wait and 503; its calls then take their turn in the API's. A request takes /mcp's
// slot before any of the API's and no API request waits for /mcp's, so neither waits for the
// other in a circle.

// mcpPath is where the streamable HTTP transport is served.
const mcpPath = "/mcp"

// withMCP serves /mcp beside api when Options.MCP is set.
func (s *Server) withMCP(api http.Handler) http.Handler {
	if s.opts.MCP == nil {
		return api
	}
	h := mcp.Handler(func(r *http.Request) mcp.Backend {
		return apiclient.NewInProcess("http://trueup.in-process", inProcess{api: api, id: identity(r), remote: r.RemoteAddr, outer: r.Context(), log: s.log}, "trueup-mcp")
	}, *s.opts.MCP, s.log)
	h = newLimiter(cmp.Or(s.opts.MaxInFlight, defaultMaxInFlight()), queueWait).wrap(h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == mcpPath {
			h.ServeHTTP(w, r)
			return
		}
		api.ServeHTTP(w, r)
	})
}

// inProcess is an http.RoundTripper that serves a request with the API handler, as id, for
// the /mcp request whose context is outer.
type inProcess struct {
	api    http.Handler
	id     auth.Identity
	remote string
	outer  context.Context
	log    *slog.Logger
}

func (t inProcess) RoundTrip(req *http.Request) (*http.Response, error) {
	// The SDK hands a tool the values of /mcp's request but not its end: the call ends when
	// the /mcp request does (its client gone, the server shutting down).
	ctx, cancel := context.WithCancel(auth.WithIdentity(req.Context(), t.id))
	defer cancel()
	defer context.AfterFunc(t.outer, cancel)()
	in := req.Clone(ctx)
	in.RequestURI, in.RemoteAddr = req.URL.RequestURI(), t.remote
	if in.Body == nil {
		in.Body = http.NoBody
	}
	rec := t.serve(in)
	if rec.code == 0 {
		rec.code = http.StatusOK
	}
	return &http.Response{Status: strconv.Itoa(rec.code) + " " + http.StatusText(rec.code), StatusCode: rec.code,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: rec.header, Body: io.NopCloser(&rec.body),
		ContentLength: int64(rec.body.Len()), Request: req}, nil
}

// serve runs the API handler on in. A panic is the handler's bug, answered 500 as the
// server's recoverer answers one: the SDK runs a tool in a goroutine of its own, where a
// panic would end the process.
func (t inProcess) serve(in *http.Request) (rec *answer) {
	rec = &answer{header: http.Header{}}
	defer func() {
		if v := recover(); v != nil {
			if v != http.ErrAbortHandler {
				t.log.Error("panic serving request", "path", in.URL.Path, "via", mcpPath, "panic", v, "stack", string(debug.Stack()))
			}
			rec = &answer{header: http.Header{}}
			writeError(rec, http.StatusInternalServerError, "internal error")
		}
	}()
	t.api.ServeHTTP(rec, in)
	return rec
}
