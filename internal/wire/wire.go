// Package wire holds the JSON types of the HTTP API v1 (DESIGN §9): the server builds them
// from the store's rows, the API client and the CLI decode them. It imports no database
// code, so a client links no driver, and a column rename does not change the API.
package wire

import (
	"encoding/json"
	"net/http"
)

// WriteJSON writes v as the JSON answer with code, never cached.
func WriteJSON(w http.ResponseWriter, code int, v any) {
	writeJSONHeader(w, code)
	// Compact: a list page of 100 resources encodes twice as fast as indented.
	_ = json.NewEncoder(w).Encode(v)
}

// writeJSONHeader writes the header of a JSON answer: never cached.
func writeJSONHeader(w http.ResponseWriter, code int) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
}

// WriteError writes the error answer {"error": msg} with code.
func WriteError(w http.ResponseWriter, code int, msg string) {
	WriteJSON(w, code, Error{Error: msg})
}

// Error is the answer of a failed request.
type Error struct {
	Error string `json:"error"`
}
