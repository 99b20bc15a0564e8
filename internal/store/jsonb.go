package store

import "encoding/json"

// The JSON the store writes into jsonb columns of its own. The names are the storage format
// (rows written by every earlier version read with them), so they are spelled here, apart
// from the row types, which carry no JSON names: the API's are package wire's.

// sourceErrorJSON is one entry of sources.errors.
type sourceErrorJSON struct {
	File    string `json:"file,omitempty"`
	Line    int    `json:"line,omitempty"`
	Path    string `json:"path,omitempty"`
	Message string `json:"message"`
}

// pruneJSON is sources.prune_refused_under: the prune settings a standing refusal was made
// under.
type pruneJSON struct {
	Enabled     bool    `json:"enabled"`
	MaxFraction float64 `json:"maxFraction"`
	AllowEmpty  bool    `json:"allowEmpty"`
}

// encodeSourceErrors spells errs for sources.errors ([] for none).
func encodeSourceErrors(errs []SourceError) []byte {
	out := make([]sourceErrorJSON, len(errs))
	for i, e := range errs {
		out[i] = sourceErrorJSON(e)
	}
	b, _ := json.Marshal(out) // strings and numbers only: it cannot fail
	return b
}

// decodeSourceErrors reads sources.errors; a JSON null stays a nil list.
func decodeSourceErrors(b []byte) ([]SourceError, error) {
	var in []sourceErrorJSON
	if err := json.Unmarshal(b, &in); err != nil || in == nil {
		return nil, err
	}
	out := make([]SourceError, len(in))
	for i, e := range in {
		out[i] = SourceError(e)
	}
	return out, nil
}

// encodePrune spells p for sources.prune_refused_under.
func encodePrune(p SourcePrune) []byte {
	b, _ := json.Marshal(pruneJSON(p)) // a bool, a float and a bool: it cannot fail
	return b
}

// decodePrune reads sources.prune_refused_under.
func decodePrune(b []byte) (SourcePrune, error) {
	var p pruneJSON
	err := json.Unmarshal(b, &p)
	return SourcePrune(p), err
}
