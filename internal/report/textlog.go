package report

import (
	"bufio"
	"bytes"
	"io"
	"regexp"
	"time"

	"github.com/spillway/spillway/classify"
	"github.com/spillway/spillway/internal/lineio"
)

// TextOptions configure the reading of a plain text log.
type TextOptions struct {
	// Pattern picks the lines that count; nil: the lines that mention
	// capacity, error or retry (any case) after their timestamp, as the
	// one-off scripts people use do.
	Pattern *regexp.Regexp
	Loc     *time.Location // the zone of timestamps that carry none
	// Classify judges a line's words; classify.Text when nil.
	Classify func(string) classify.Class
}

// hourKey is an hour of a text log, as its lines write it, and a class;
// for a line with a zone, its minute too (the zone is applied at the end,
// and a +05:30 line's minute may fall in another hour).
type hourKey struct {
	y            int16
	mo, d, h, mi int8
	off          int16 // minutes east of UTC, when hasOffset
	class        string
	hasOffset    bool
}

// maxMemo bounds the class memo of a text log's messages.
const maxMemo = 8192

// ReadText folds a plain text log into a: every line the pattern picks is
// one failure, at the hour its timestamp says (YYYY-MM-DD HH:MM, with a
// space or T, seconds, fractions and a zone optional), of the class its
// words say. Lines without a timestamp are counted as unreadable. It is
// built for speed (a log of millions of lines is read in well under a
// second): lines are counted per hour and class, and the classifier's
// verdict is kept per message shape (digits masked), so that each shape
// is classified once.
func ReadText(r io.Reader, a *Aggregate, o TextOptions) (Input, error) {
	in := Input{Source: "text"}
	judge := o.Classify
	if judge == nil {
		judge = func(s string) classify.Class { return classify.Text(s).Class }
	}
	loc := o.Loc
	if loc == nil {
		loc = time.Local
	}
	counts := map[hourKey]int{}
	lo, hi := civil(a.since, loc), civil(a.until, loc)
	memo := map[string]string{}
	var shape []byte
	br := bufio.NewReaderSize(r, 256<<10)
	var buf []byte
	for {
		var err error
		buf, err = lineio.ReadMax(br, buf[:0], maxTextLine)
		line := bytes.TrimRight(buf, "\r\n")
		if len(line) > 0 {
			k, rest, ok := stamp(line)
			switch {
			case !ok:
				if o.Pattern == nil || o.Pattern.Match(line) {
					in.Unreadable++
				}
			case o.Pattern != nil && !o.Pattern.Match(line):
			case o.Pattern == nil && !mentions(rest):
			case !k.hasOffset && !inRange(k, lo, hi):
				// out of --since/--until, to the minute (a line with a
				// zone is judged with its minute kept, at the end)
			default:
				if !k.hasOffset {
					k.mi = 0 // counted per hour: the minute has been used
				}
				shape = maskDigits(shape[:0], rest)
				class, hit := memo[string(shape)]
				if !hit {
					class = string(judge(string(rest[:min(len(rest), 1024)])))
					if class == string(classify.Unknown) || class == string(classify.OK) {
						class = "error"
					}
					if len(memo) < maxMemo {
						memo[string(shape)] = class
					}
				}
				k.class = class
				counts[k]++
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return in, err
		}
	}
	for k, n := range counts {
		var t time.Time
		if k.hasOffset {
			t = time.Date(int(k.y), time.Month(k.mo), int(k.d), int(k.h), int(k.mi), 0, 0, time.FixedZone("", int(k.off)*60))
		} else {
			t = time.Date(int(k.y), time.Month(k.mo), int(k.d), int(k.h), int(k.mi), 0, 0, loc)
		}
		if !k.hasOffset && !a.since.IsZero() && t.Before(a.since) {
			t = a.since // the hour --since starts in: its lines were checked to the minute
		}
		if a.AddN(Event{TS: t, Source: "text", Class: k.class, Latency: -1}, n) {
			in.Events += n
		}
	}
	return in, nil
}

// maxTextLine is as much of a text log's line as is read: a timestamp and
// a message; the rest of a longer line is skipped, so that one huge line
// costs no memory.
const maxTextLine = 4 << 10

func digit(c byte) bool { return c >= '0' && c <= '9' }

func num(b []byte) int {
	n := 0
	for _, c := range b {
		n = n*10 + int(c-'0')
	}
	return n
}

// stamp finds the first YYYY-MM-DD[ T]HH:MM in line: its hour (and zone,
// when one follows the time) and the rest of the line after it.
func stamp(line []byte) (hourKey, []byte, bool) {
	for i := 0; i+16 <= len(line); i++ {
		if !digit(line[i]) {
			continue
		}
		p := line[i:]
		if !(digit(p[1]) && digit(p[2]) && digit(p[3]) && p[4] == '-' && digit(p[5]) && digit(p[6]) && p[7] == '-' &&
			digit(p[8]) && digit(p[9]) && (p[10] == ' ' || p[10] == 'T') && digit(p[11]) && digit(p[12]) && p[13] == ':' && digit(p[14]) && digit(p[15])) {
			continue
		}
		k := hourKey{y: int16(num(p[0:4])), mo: int8(num(p[5:7])), d: int8(num(p[8:10])), h: int8(num(p[11:13])), mi: int8(num(p[14:16]))}
		if k.mo < 1 || k.mo > 12 || k.d < 1 || k.d > 31 || k.h > 23 || k.mi > 59 {
			continue
		}
		j := 16
		if j+2 < len(p) && p[j] == ':' && digit(p[j+1]) && digit(p[j+2]) {
			j += 3
			if j < len(p) && (p[j] == '.' || p[j] == ',') {
				j++
				for j < len(p) && digit(p[j]) {
					j++
				}
			}
		}
		switch {
		case j < len(p) && p[j] == 'Z':
			k.hasOffset = true
			j++
		case j+2 < len(p) && (p[j] == '+' || p[j] == '-') && digit(p[j+1]) && digit(p[j+2]):
			m := 3
			mins := 0
			if j+5 < len(p) && p[j+3] == ':' && digit(p[j+4]) && digit(p[j+5]) {
				mins, m = num(p[j+4:j+6]), 6
			} else if j+4 < len(p) && digit(p[j+3]) && digit(p[j+4]) {
				mins, m = num(p[j+3:j+5]), 5
			}
			off := num(p[j+1:j+3])*60 + mins
			if p[j] == '-' {
				off = -off
			}
			k.off, k.hasOffset = int16(off), true
			j += m
		}
		return k, p[j:], true
	}
	return hourKey{}, nil, false
}

var keywords = [][]byte{[]byte("capacity"), []byte("error"), []byte("retry")}

// mentions reports whether b mentions capacity, error or retry in any
// case. It looks at b where it is, with no lowered copy: most lines of a
// busy log are successes that mention none, and this is all they cost
// after their timestamp.
func mentions(b []byte) bool {
	for i := 0; i < len(b); i++ {
		var k []byte
		switch b[i] | 0x20 { // ASCII letters lowered; other bytes never match a keyword's first letter
		case 'c':
			k = keywords[0]
		case 'e':
			k = keywords[1]
		case 'r':
			k = keywords[2]
		default:
			continue
		}
		if len(b)-i >= len(k) && equalFoldASCII(b[i:i+len(k)], k) {
			return true
		}
	}
	return false
}

// equalFoldASCII reports whether b is k (lower-case letters) in any case.
func equalFoldASCII(b, k []byte) bool {
	for j, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != k[j] {
			return false
		}
	}
	return true
}

// maskDigits appends b with every word that holds a digit (a number, a
// request id, a timestamp) or is eight hex digits or more written as one '#', so that lines that
// differ only in those share one shape; a three-digit number that begins
// with 4 or 5 is kept (it may be an HTTP status, and decide the class).
// At most 256 bytes of shape are kept.
func maskDigits(dst, b []byte) []byte {
	for i := 0; i < len(b) && len(dst) < 256; {
		if !wordByte[b[i]] {
			dst = append(dst, b[i])
			i++
			continue
		}
		j, digits, hex := i, false, true
		for j < len(b) && wordByte[b[j]] {
			digits = digits || digit(b[j])
			hex = hex && hexByte[b[j]]
			j++
		}
		if hex && j-i >= 8 {
			digits = true // an id in hex that happens to hold no digit
		}
		switch {
		case !digits, j-i == 3 && (b[i] == '4' || b[i] == '5') && digit(b[i+1]) && digit(b[i+2]):
			dst = append(dst, b[i:j]...)
		default:
			dst = append(dst, '#')
		}
		i = j
	}
	return dst
}

// civil is t in loc as a number that orders wall-clock minutes (0 for the
// zero time: no bound).
func civil(t time.Time, loc *time.Location) int64 {
	if t.IsZero() {
		return 0
	}
	t = t.In(loc)
	return civilOf(t.Year(), int(t.Month()), t.Day(), t.Hour(), t.Minute())
}

func civilOf(y, mo, d, h, mi int) int64 {
	return (((int64(y)*13+int64(mo))*32+int64(d))*24+int64(h))*60 + int64(mi)
}

// inRange reports whether a naive line's minute is within [lo, hi) (0:
// no bound).
func inRange(k hourKey, lo, hi int64) bool {
	if lo == 0 && hi == 0 {
		return true
	}
	c := civilOf(int(k.y), int(k.mo), int(k.d), int(k.h), int(k.mi))
	return (lo == 0 || c >= lo) && (hi == 0 || c < hi)
}

// wordByte and hexByte are the bytes of a word (letters, digits, '.')
// and of a hex number.
var wordByte, hexByte = func() (w, h [256]bool) {
	for c := 0; c < 256; c++ {
		b := byte(c)
		w[c] = b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b == '.'
		h[c] = b >= '0' && b <= '9' || b >= 'a' && b <= 'f' || b >= 'A' && b <= 'F'
	}
	return w, h
}()
