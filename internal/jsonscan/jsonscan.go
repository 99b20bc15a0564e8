// Package jsonscan reads the numbers of encoded JSON as written, without decoding it.
package jsonscan

import (
	"iter"
	"strings"
)

// Numbers yields the text of each number of the valid JSON v, in order: the bytes of strings
// (keys included) are skipped, escapes and all. On text that is not JSON what it yields
// means nothing.
func Numbers(v []byte) iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		inString := false
		for i := 0; i < len(v); i++ {
			c := v[i]
			switch {
			case inString:
				if c == '\\' {
					i++
				} else if c == '"' {
					inString = false
				}
			case c == '"':
				inString = true
			case c == '-' || c >= '0' && c <= '9':
				j := i + 1
				for j < len(v) && strings.IndexByte("0123456789.eE+-", v[j]) >= 0 {
					j++
				}
				if !yield(v[i:j]) {
					return
				}
				i = j - 1
			}
		}
	}
}
