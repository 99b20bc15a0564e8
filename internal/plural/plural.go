// Package plural owns how a count reads in English: "1 type", "2 types", "0 errors".
package plural

import "strconv"

// Count is n followed by one or many, whichever agrees with n: Count(1, "type", "types") is
// "1 type", Count(0, "type", "types") is "0 types". Both forms are given so that irregular
// words ("dependency", "dependencies") need no rules.
func Count(n int, one, many string) string {
	return strconv.Itoa(n) + " " + Word(n, one, many)
}

// Word is one when n is 1 and many otherwise, for sentences whose verb agrees too
// ("1 resource is", "2 resources are").
func Word(n int, one, many string) string {
	if n == 1 || n == -1 {
		return one
	}
	return many
}
