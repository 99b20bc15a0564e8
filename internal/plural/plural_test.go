package plural

import "testing"

func TestCount(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		n         int
		one, many string
		want      string
	}{
		{0, "type", "types", "0 types"},
		{1, "type", "types", "1 type"},
		{2, "type", "types", "2 types"},
		{1, "dependency", "dependencies", "1 dependency"},
		{3, "dependency", "dependencies", "3 dependencies"},
		{-1, "byte", "bytes", "-1 byte"},
		{11, "resource", "resources", "11 resources"},
	} {
		if got := Count(c.n, c.one, c.many); got != c.want {
			t.Errorf("Count(%d, %q, %q) = %q, want %q", c.n, c.one, c.many, got, c.want)
		}
	}
}

func TestWord(t *testing.T) {
	t.Parallel()
	for n, want := range map[int]string{0: "resources are", 1: "resource is", 2: "resources are"} {
		if got := Word(n, "resource is", "resources are"); got != want {
			t.Errorf("Word(%d) = %q, want %q", n, got, want)
		}
	}
}
