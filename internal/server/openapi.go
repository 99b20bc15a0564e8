package server

import (
	_ "embed"
	"net/http"
)

// openapiDoc describes every route of routes() (DESIGN §9) as OpenAPI 3.1; openapi_test.go
// keeps the two in step and checks real answers against its schemas.
//
//go:embed openapi.json
var openapiDoc []byte

func (s *Server) openapi(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(openapiDoc)
}
