// Package words is how spillway says a count in English: "1 event", "3
// events". Every message that counts something says it through here, so
// that none says "1 events".
package words

import (
	"strconv"
	"strings"
)

// Count is n and noun, the noun in the plural unless n is 1: "1 attempt",
// "2 attempts", "0 attempts", "3 retries" (a consonant's y becomes ies,
// any other noun takes an s).
func Count(n int, noun string) string {
	many := noun + "s"
	if l := len(noun); l > 1 && noun[l-1] == 'y' && !strings.ContainsRune("aeiou", rune(noun[l-2])) {
		many = noun[:l-1] + "ies"
	}
	return strconv.Itoa(n) + " " + Plural(n, noun, many)
}

// Plural is one when n is 1, else many: for a noun whose plural is not
// its singular and an s ("try", "tries"), or a phrase that agrees with n.
func Plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
