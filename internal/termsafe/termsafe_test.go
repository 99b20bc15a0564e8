package termsafe

import (
	"bytes"
	"testing"
)

func TestStrip(t *testing.T) {
	cases := []struct{ in, want string }{
		{"plain text\nnext\tcol", "plain text\nnext\tcol"},
		{"\x1b[31mred\x1b[0m", "red"},
		{"\x1b[2J\x1b[Hcleared", "cleared"},
		{"title\x1b]0;pwned\x07after", "titleafter"},
		{"link \x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\ here", "link click here"},
		{"clip \x1b]52;c;ZXZpbA==\x07!", "clip !"},
		{"over\rwrite", "overwrite"},
		{"bell\x07 nul\x00 del\x7f", "bell nul del"},
		{"c1 csi \u009b31mx", "c1 csi x"},
		{"c1 osc \u009d0;t\u009cy", "c1 osc y"},
		{"esc c\x1bcreset", "esc creset"},
		{"ünïcödé ✓ 日本", "ünïcödé ✓ 日本"},
		{"trailing esc \x1b", "trailing esc "},
		{"bad utf8 \xff ok", "bad utf8 \ufffd ok"},
	}
	for _, c := range cases {
		if got := Strip(c.in); got != c.want {
			t.Errorf("Strip(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestWriterAcrossChunks(t *testing.T) {
	var buf bytes.Buffer
	w := Writer(&buf)
	for _, chunk := range []string{"a\x1b", "[3", "1mb\x1b]0;ti", "tle\x07c", "\xe2\x9c", "\x93"} {
		if n, err := w.Write([]byte(chunk)); err != nil || n != len(chunk) {
			t.Fatalf("Write(%q) = %d, %v", chunk, n, err)
		}
	}
	if got := buf.String(); got != "abc✓" {
		t.Fatalf("got %q", got)
	}
	if Writer(w) != w {
		t.Fatal("a Writer wrapped twice")
	}
}
