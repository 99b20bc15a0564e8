// Package termsafe keeps text that came from elsewhere (messages a plugin returned, a commit's
// file names, a forge's error) from driving the terminal it is printed on: escape sequences
// (colours, cursor moves, window titles, hyperlinks, the clipboard) and other control
// characters are removed; newlines and tabs stay.
package termsafe

import (
	"io"
	"unicode/utf8"
)

// state is where a scan is within an escape sequence.
type state int

const (
	text   state = iota
	esc          // after ESC
	csi          // ESC [ … (or the C1 CSI): parameters until a final byte 0x40–0x7E
	str          // ESC ] / P / X / ^ / _ … (or C1 OSC, DCS, SOS, PM, APC): until BEL or ST
	strEsc       // ESC inside a string: ST is ESC \
)

// scanner removes control sequences from a stream; it keeps its state between chunks, so a
// sequence split across writes is removed whole.
type scanner struct {
	st      state
	pending []byte // an incomplete UTF-8 sequence that ended the previous chunk
}

func (sc *scanner) append(dst []byte, p []byte) []byte {
	if len(sc.pending) > 0 {
		p = append(sc.pending, p...)
		sc.pending = nil
	}
	for len(p) > 0 {
		if !utf8.FullRune(p) && len(p) < utf8.UTFMax {
			// The rest of this character comes with the next chunk.
			sc.pending = append([]byte(nil), p...)
			return dst
		}
		r, n := utf8.DecodeRune(p)
		p = p[n:]
		switch sc.st {
		case text:
			switch {
			case r == 0x1b:
				sc.st = esc
			case r == 0x9b:
				sc.st = csi
			case r == 0x9d || r == 0x90 || r == 0x98 || r == 0x9e || r == 0x9f:
				sc.st = str
			case r == '\n' || r == '\t':
				dst = append(dst, byte(r))
			case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
				// other C0 and C1 controls: dropped (a carriage return could overwrite a line)
			default:
				dst = utf8.AppendRune(dst, r)
			}
		case esc:
			switch r {
			case '[':
				sc.st = csi
			case ']', 'P', 'X', '^', '_':
				sc.st = str
			default:
				sc.st = text // a two-byte sequence (ESC c, ESC 7, …): both dropped
			}
		case csi:
			if r >= 0x40 && r <= 0x7e {
				sc.st = text
			}
		case str:
			switch r {
			case 0x07, 0x9c:
				sc.st = text
			case 0x1b:
				sc.st = strEsc
			}
		case strEsc:
			if r == '\\' {
				sc.st = text
			} else {
				sc.st = str
			}
		}
	}
	return dst
}

// Strip returns s without control sequences and control characters other than newline and
// tab.
func Strip(s string) string {
	var sc scanner
	out := sc.append(make([]byte, 0, len(s)), []byte(s))
	if len(sc.pending) > 0 && sc.st == text {
		out = utf8.AppendRune(out, utf8.RuneError) // a truncated character at the end
	}
	return string(out)
}

// Writer strips what is written to w.
func Writer(w io.Writer) io.Writer {
	if _, ok := w.(*writer); ok {
		return w
	}
	return &writer{w: w}
}

type writer struct {
	w   io.Writer
	sc  scanner
	buf []byte
}

// Write reports len(p) when the stripped bytes were written: callers count what they gave.
func (w *writer) Write(p []byte) (int, error) {
	w.buf = w.sc.append(w.buf[:0], p)
	if _, err := w.w.Write(w.buf); err != nil {
		return 0, err
	}
	return len(p), nil
}
