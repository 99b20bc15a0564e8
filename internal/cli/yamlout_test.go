package cli

import (
	"testing"

	yamlv3 "go.yaml.in/yaml/v3"
)

func TestJSONToYAMLKeepsIntegers(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"beyond uint64", `{"num":123456789012345678901234567890}`, "num: 123456789012345678901234567890\n"},
		{"negative beyond int64", `{"num":-98765432109876543210987654321}`, "num: -98765432109876543210987654321\n"},
		{"uint64 max", `{"num":18446744073709551615}`, "num: 18446744073709551615\n"},
		{"above 2^53", `{"num":9007199254740993}`, "num: 9007199254740993\n"},
		{"floats as before", `{"f":1.5,"g":1e+25}`, "f: 1.5\ng: 1e+25\n"},
		{"many, nested, in lists", `{"a":[123456789012345678901234567891,{"b":123456789012345678901234567892}],"s":"x"}`,
			"a:\n- 123456789012345678901234567891\n- b: 123456789012345678901234567892\ns: x\n"},
		{"eleven placeholders (10 before 1)", `[1e40,11111111111111111111111,22222222222222222222222,33333333333333333333333,44444444444444444444444,55555555555555555555555,66666666666666666666666,77777777777777777777777,88888888888888888888888,99999999999999999999999,10000000000000000000000,11000000000000000000000]`,
			"- 1e+40\n- 11111111111111111111111\n- 22222222222222222222222\n- 33333333333333333333333\n- 44444444444444444444444\n- 55555555555555555555555\n- 66666666666666666666666\n- 77777777777777777777777\n- 88888888888888888888888\n- 99999999999999999999999\n- 10000000000000000000000\n- 11000000000000000000000\n"},
		{"strings that look like numbers stay strings", `{"s":"123456789012345678901234567890"}`, "s: \"123456789012345678901234567890\"\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := jsonToYAML([]byte(c.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != c.want {
				t.Fatalf("got\n%s\nwant\n%s", got, c.want)
			}
			// A YAML reader gets the integer back, not a float or a string.
			var v any
			if err := yamlv3.Unmarshal(got, &v); err != nil {
				t.Fatal(err)
			}
		})
	}
	// What a YAML reader makes of the big one: a number (go-yaml tags an integer beyond
	// uint64 !!float, a YAML 1.2 core reader !!int) with every digit — never a string.
	out, _ := jsonToYAML([]byte(`{"num":123456789012345678901234567890}`))
	var n yamlv3.Node
	if err := yamlv3.Unmarshal(out, &n); err != nil {
		t.Fatal(err)
	}
	if v := n.Content[0].Content[1]; v.Tag == "!!str" || v.Value != "123456789012345678901234567890" {
		t.Errorf("read back as %s %q", v.Tag, v.Value)
	}
}
