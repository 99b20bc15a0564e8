package cli

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"strings"

	"sigs.k8s.io/yaml"
)

// jsonToYAML converts a JSON document to YAML as sigs.k8s.io/yaml does, except that integers
// beyond int64/uint64 keep every digit: JSONToYAML reads numbers as float64 and would print
// 123456789012345678901234567890 as 1.2345678901234568e+29 (a float, or a string to YAML 1.1
// readers). Such integers pass through the conversion as unique placeholder strings, which
// are put back as the plain integer afterwards.
func jsonToYAML(doc []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	nonce := make([]byte, 6)
	_, _ = rand.Read(nonce)
	prefix := "trueup-int-" + hex.EncodeToString(nonce) + "-"
	var bigs []string
	v = swapBigInts(v, func(n string) string {
		bigs = append(bigs, n)
		return fmt.Sprintf("%s%d", prefix, len(bigs)-1)
	})
	if len(bigs) == 0 {
		return yaml.JSONToYAML(doc)
	}
	j, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	y, err := yaml.JSONToYAML(j)
	if err != nil {
		return nil, err
	}
	out := string(y)
	for i := len(bigs) - 1; i >= 0; i-- { // 10 before 1
		out = strings.ReplaceAll(out, fmt.Sprintf("%s%d", prefix, i), bigs[i])
	}
	return []byte(out), nil
}

// swapBigInts replaces every integer that float64 cannot hold exactly and that is beyond
// int64/uint64 with what placeholder returns.
func swapBigInts(v any, placeholder func(string) string) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = swapBigInts(e, placeholder)
		}
	case []any:
		for i, e := range x {
			x[i] = swapBigInts(e, placeholder)
		}
	case json.Number:
		s := string(x)
		if strings.ContainsAny(s, ".eE") {
			return x
		}
		if _, err := x.Int64(); err == nil {
			return x
		}
		if n, ok := new(big.Int).SetString(s, 10); ok && n.Sign() > 0 && n.IsUint64() {
			return x
		}
		return placeholder(s)
	}
	return v
}
