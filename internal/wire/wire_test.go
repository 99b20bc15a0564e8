package wire

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestWriteJSON(t *testing.T) {
	tests := []struct {
		name  string
		write func(http.ResponseWriter)
		code  int
		body  string
	}{
		{"value", func(w http.ResponseWriter) { WriteJSON(w, http.StatusOK, map[string]int{"n": 1}) }, 200, `{"n":1}` + "\n"},
		{"accepted", func(w http.ResponseWriter) { WriteJSON(w, http.StatusAccepted, []string{}) }, 202, "[]\n"},
		{"error", func(w http.ResponseWriter) { WriteError(w, http.StatusNotFound, "source x: not found") }, 404, `{"error":"source x: not found"}` + "\n"},
		{"error escapes HTML", func(w http.ResponseWriter) { WriteError(w, http.StatusBadRequest, "<a>") }, 400, `{"error":"\u003ca\u003e"}` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			tt.write(rec)
			if rec.Code != tt.code || rec.Body.String() != tt.body {
				t.Errorf("got %d %q, want %d %q", rec.Code, rec.Body.String(), tt.code, tt.body)
			}
			if ct, cc := rec.Header().Get("Content-Type"), rec.Header().Get("Cache-Control"); ct != "application/json" || cc != "no-store" {
				t.Errorf("headers: Content-Type %q, Cache-Control %q", ct, cc)
			}
		})
	}
}

// TestShapes pins the names the API spells (the server's tests check them against the
// OpenAPI document): empty values show which fields are always present.
func TestShapes(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"resource", Resource{}, `{"apiVersion":"","kind":"","metadata":{"name":"","namespace":"","uid":"","generation":0,"labels":null,"annotations":null,"creationTimestamp":"0001-01-01T00:00:00Z","deletionTimestamp":null},"spec":null,"status":{"phase":"","observedGeneration":0,"conditions":null,"message":"","outputs":null,"lastReconcileTime":null},"source":{"name":"","path":"","revision":""}}`},
		{"source with counts", SourceDetail{Source: Source{Name: "s", Errors: []SourceError{{Message: "m"}}}, Resources: &SourceCounts{Total: 1}},
			`{"name":"s","url":"","branch":"","path":"","revision":"","lastAttemptedRevision":"","lastSyncTime":null,"conditions":null,"errors":[{"message":"m"}],"lagSeconds":0,"prune":{"enabled":false,"maxFraction":0,"allowEmpty":false},"resources":{"total":1,"phases":null,"deleting":0,"orphaned":0}}`},
		{"event", Event{ID: 1, Source: "s", Type: "Normal", CreatedAt: at}, `{"id":1,"source":"s","type":"Normal","reason":"","message":"","createdAt":"2026-01-02T03:04:05Z"}`},
		{"change", Change{ID: 2, Object: "source", Type: "ADDED", Name: "s", At: at}, `{"id":2,"object":"source","type":"ADDED","name":"s","at":"2026-01-02T03:04:05Z"}`},
		{"history", HistoryEntry{ID: 3, StartedAt: at, FinishedAt: at}, `{"id":3,"uid":"","namespace":"","kind":"","name":"","generation":0,"revision":"","operation":"","trigger":"","result":"","message":"","startedAt":"2026-01-02T03:04:05Z","finishedAt":"2026-01-02T03:04:05Z","durationMs":0}`},
		{"replica", Replica{Name: "r", StartedAt: at, LastSeen: at}, `{"name":"r","hostname":"","pid":0,"version":"","listen":"","startedAt":"2026-01-02T03:04:05Z","lastSeen":"2026-01-02T03:04:05Z","alive":false,"leases":null,"reconciles":0,"config":{"hash":"","loadedAt":null,"error":"","errorAt":null}}`},
		{"approval", Approval{RequestedAt: at, Approvals: []ApprovalVote{{At: at}}}, `{"namespace":"","kind":"","name":"","source":"","generation":0,"deleting":false,"changeType":"","revision":"","state":"","decision":"","policy":"","message":"","requires":null,"author":{"name":"","email":""},"planHash":"","plan":{"available":false,"changes":false,"counted":false,"add":0,"change":0,"destroy":0,"replace":0,"summary":""},"approvals":[{"actor":"","verdict":"","reason":"","at":"2026-01-02T03:04:05Z"}],"requestedAt":"2026-01-02T03:04:05Z"}`},
		{"type", ResourceType{Name: "t", CreatedAt: at, UpdatedAt: at}, `{"name":"t","group":"","source":"","path":"","revision":"","spec":null,"createdAt":"2026-01-02T03:04:05Z","updatedAt":"2026-01-02T03:04:05Z"}`},
		{"type with drift", ResourceType{Name: "t", Drift: &DriftPolicy{Mode: "detect"}, CreatedAt: at, UpdatedAt: at}, `{"name":"t","group":"","source":"","path":"","revision":"","spec":null,"drift":{"mode":"detect"},"createdAt":"2026-01-02T03:04:05Z","updatedAt":"2026-01-02T03:04:05Z"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.v)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.want {
				t.Errorf("got\n%s\nwant\n%s", b, tt.want)
			}
		})
	}
}
