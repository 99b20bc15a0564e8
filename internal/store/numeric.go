package store

import (
	"bytes"
	"fmt"

	"github.com/trueup-dev/trueup/internal/jsonscan"
)

// PostgreSQL's numeric, which jsonb stores its numbers as, holds a weight of at most 32,767
// base-10,000 digits and a display scale of 14 bits (make_result in numeric.c): at most
// 131,072 decimal digits from the first that is not zero to the decimal point, and 16,383
// after it, the fraction's written digits less the exponent (trailing zeros count). Its
// input refuses an exponent of INT_MAX/2 or more either way before it looks at the digits
// (set_var_from_str). A JSON document with a number past these is refused whole.
const (
	numericDigitsBefore = 131072
	numericDigitsAfter  = 16383
	numericExponentMax  = 1<<30 - 1
)

// UnstorableNumber says why the JSON text js holds a number a jsonb column cannot hold, ""
// when it holds none: such a number in one row's value fails the statement that writes it,
// and every other row the statement writes with it. The reason does not quote the number,
// which may hold a secret's digits. js must be valid JSON (the answer means nothing else).
func UnstorableNumber(js []byte) string {
	if len(js) <= numericDigitsAfter && !bytes.ContainsAny(js, "eE") {
		return "" // no exponent, and too short for 16,384 digits after a point
	}
	for n := range jsonscan.Numbers(js) {
		if why := numericFault(n); why != "" {
			return why
		}
	}
	return ""
}

var exponentFault = fmt.Sprintf("a number beyond PostgreSQL's numeric (an exponent of %d or more either way)", numericExponentMax)

// numericFault says why PostgreSQL's numeric cannot hold the JSON number n, "" when it can.
func numericFault(n []byte) string {
	n = bytes.TrimPrefix(n, []byte("-"))
	mantissa, exp := n, []byte(nil)
	if k := bytes.IndexAny(n, "eE"); k >= 0 {
		mantissa, exp = n[:k], n[k+1:]
	}
	var exponent int64
	if len(exp) > 0 {
		neg := exp[0] == '-'
		if exp[0] == '-' || exp[0] == '+' {
			exp = exp[1:]
		}
		exp = bytes.TrimLeft(exp, "0")
		if len(exp) > 10 { // 10^10 or more
			return exponentFault
		}
		for _, d := range exp {
			exponent = 10*exponent + int64(d-'0')
		}
		if exponent >= numericExponentMax {
			return exponentFault
		}
		if neg {
			exponent = -exponent
		}
	}
	whole, frac := mantissa, []byte(nil)
	if k := bytes.IndexByte(mantissa, '.'); k >= 0 {
		whole, frac = mantissa[:k], mantissa[k+1:]
	}
	if int64(len(frac))-exponent > numericDigitsAfter {
		return fmt.Sprintf("a number beyond PostgreSQL's numeric (more than %d digits after the decimal point)", numericDigitsAfter)
	}
	// The decimal digits before the point, from the first that is not zero; a zero has none.
	before := int64(0)
	if k := bytes.IndexFunc(whole, func(r rune) bool { return r != '0' }); k >= 0 {
		before = int64(len(whole)-k) + exponent
	} else if k := bytes.IndexFunc(frac, func(r rune) bool { return r != '0' }); k >= 0 {
		before = int64(-k) + exponent
	}
	if before > numericDigitsBefore {
		return fmt.Sprintf("a number beyond PostgreSQL's numeric (more than %d digits before the decimal point)", numericDigitsBefore)
	}
	return ""
}
