package preview

import (
	"bytes"
	"encoding/json"
)

// Mask returns spec with every secret reference ({secretRef: {name, key}}) replaced by
// "*** secretRef NAME/KEY": a preview never resolves one. Encrypted fields are already
// markers ("*** sops:…") in every spec a preview sees, the PR's and the applied ones alike.
func Mask(spec json.RawMessage) json.RawMessage {
	if !bytes.Contains(spec, []byte(`"secretRef"`)) {
		return spec
	}
	v, err := decode(spec)
	if err != nil {
		return spec
	}
	out, err := json.Marshal(mask(v))
	if err != nil {
		return spec
	}
	return out
}

func mask(v any) any {
	switch x := v.(type) {
	case map[string]any:
		if ref, ok := x["secretRef"].(map[string]any); ok && len(x) == 1 {
			name, _ := ref["name"].(string)
			key, _ := ref["key"].(string)
			return "*** secretRef " + name + "/" + key
		}
		for k, e := range x {
			x[k] = mask(e)
		}
	case []any:
		for i, e := range x {
			x[i] = mask(e)
		}
	}
	return v
}

// decode reads a JSON value keeping numbers as they are written.
func decode(spec json.RawMessage) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(spec))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}
