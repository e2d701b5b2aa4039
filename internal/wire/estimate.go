package wire

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"regexp"
	"strconv"
)

// The input size of a request, as spillway estimates it to pick a model
// whose context window fits (and as the simulator counts it): text at
// about four bytes a token, and what a request carries inline as base64
// at what the providers charge for it, never at the base64's length (a
// 1.2 MB screenshot is about 1,600 tokens, not 300,000).
const (
	// ImageTokens is an inline image whose size its header does not give:
	// about what the providers charge for a large one after they scale it
	// down (Anthropic's long edge of 1,568 px: about 1,600 tokens).
	ImageTokens = 1600
	// imagePixelsPerToken is Anthropic's published rule of thumb: an
	// image costs about width × height / 750 tokens, up to ImageTokens
	// (a larger one is scaled down to about that).
	imagePixelsPerToken = 750
	// PDFPageTokens is an inline PDF's cost per page (text and the page's
	// image: Anthropic documents 1,500 to 3,000 tokens a page; the upper
	// end, so that a long PDF is never sent to too small a window).
	PDFPageTokens = 3000
	// pdfBytesPerPage guesses the pages of a PDF that names none in the
	// open (its page objects compressed): one a 50 KB.
	pdfBytesPerPage = 50 << 10
	// minMedia is the shortest string taken for inline media: shorter ones
	// are text, whatever they hold.
	minMedia = 256
	// sniffBytes is how much of an image is decoded to read its size (a
	// JPEG's frame header can follow an embedded thumbnail).
	sniffBytes = 64 << 10
)

// EstimateTokens is the estimated input tokens of a request body of any
// of the formats: every JSON string of it that is inline media (a data
// URL, or base64 whose bytes start as an image or a PDF: OpenAI's
// image_url and input_file, Anthropic's base64 source, Gemini's
// inlineData) counts as ImageTokens (or width × height / 750, when the
// image's header gives its size, at most ImageTokens) or PDFPageTokens a
// page; the rest of the body counts at four bytes a token.
//
// It scans the body's bytes once, and decodes only what it takes for
// media. The body is taken to be JSON (a string is what lies between
// unescaped quotes); on anything else it counts bytes.
func EstimateTokens(body []byte) int {
	text, media := len(body), 0
	for i := 0; i < len(body); i++ {
		if body[i] != '"' {
			continue
		}
		j := i + 1
		for j < len(body) && body[j] != '"' {
			if body[j] == '\\' {
				j++
			}
			j++
		}
		if s := body[i+1 : min(j, len(body))]; len(s) >= minMedia {
			if cost, ok := mediaTokens(s); ok {
				text -= len(s)
				media += cost
			}
		}
		i = j
	}
	return (text+3)/4 + media
}

// mediaTokens is the cost of s, a JSON string's bytes, when it is inline
// media.
func mediaTokens(s []byte) (int, bool) {
	image := false
	if rest, ok := bytes.CutPrefix(s, []byte("data:")); ok {
		comma := bytes.IndexByte(rest, ',')
		if comma < 0 || !bytes.HasSuffix(rest[:comma], []byte(";base64")) {
			return 0, false
		}
		image = bytes.HasPrefix(rest, []byte("image/"))
		s = rest[comma+1:]
	}
	if !isBase64(s) {
		return 0, false
	}
	head := decode64(s, sniffBytes)
	switch {
	case bytes.HasPrefix(head, []byte("%PDF-")):
		return pdfPages(decode64(s, -1)) * PDFPageTokens, true
	case image || isImage(head):
		if w, h, ok := imageSize(head); ok {
			w, h = min(w, 1<<20), min(h, 1<<20) // a forged header's size must not overflow
			return max(1, min(w*h/imagePixelsPerToken, ImageTokens)), true
		}
		return ImageTokens, true
	}
	return 0, false
}

// isBase64 reports whether s (a JSON string's bytes) is base64 of the
// standard or URL alphabet, padding at the end only; JSON may escape its
// slashes (\/), and line breaks (\n, \r: MIME's every 76 characters)
// are skipped.
func isBase64(s []byte) bool {
	pad := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' {
			if i+1 >= len(s) {
				return false
			}
			i++
			switch s[i] {
			case 'n', 'r':
				continue
			case '/':
				c = '/'
			default:
				return false
			}
		}
		switch {
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '+', c == '-', c == '_', c == '/':
			if pad {
				return false
			}
		case c == '=':
			pad = true
		default:
			return false
		}
	}
	return true
}

// decode64 decodes the first limit bytes' worth of s (all of it when
// limit < 0), whichever alphabet it is in; what does not decode is left
// off.
func decode64(s []byte, limit int) []byte {
	clean := make([]byte, 0, min(len(s), max(limit, 0)*4/3+8))
	if limit < 0 {
		clean = make([]byte, 0, len(s))
	}
	for i := 0; i < len(s) && (limit < 0 || len(clean) < limit*4/3+4); i++ {
		switch c := s[i]; c {
		case '\\':
			if i+1 < len(s) && s[i+1] != '/' {
				i++ // \n, \r: a line break, skipped
			}
		case '=':
		case '-':
			clean = append(clean, '+')
		case '_':
			clean = append(clean, '/')
		default:
			clean = append(clean, c)
		}
	}
	clean = clean[:len(clean)/4*4]
	out := make([]byte, base64.StdEncoding.DecodedLen(len(clean)))
	n, _ := base64.StdEncoding.Decode(out, clean)
	return out[:n]
}

// isImage reports whether b starts as an image file.
func isImage(b []byte) bool {
	switch {
	case bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")),
		bytes.HasPrefix(b, []byte("\xff\xd8\xff")),
		bytes.HasPrefix(b, []byte("GIF8")),
		len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP",
		len(b) >= 12 && string(b[4:8]) == "ftyp" && (string(b[8:12]) == "heic" || string(b[8:12]) == "heix" || string(b[8:12]) == "avif" || string(b[8:12]) == "mif1"),
		isBMP(b):
		return true
	}
	return false
}

// imageSize reads an image's width and height from its header (PNG, GIF,
// JPEG, WebP, BMP).
func imageSize(b []byte) (w, h int, ok bool) {
	switch {
	case bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) && len(b) >= 24:
		return int(binary.BigEndian.Uint32(b[16:20])), int(binary.BigEndian.Uint32(b[20:24])), true
	case bytes.HasPrefix(b, []byte("GIF8")) && len(b) >= 10:
		return int(binary.LittleEndian.Uint16(b[6:8])), int(binary.LittleEndian.Uint16(b[8:10])), true
	case bytes.HasPrefix(b, []byte("\xff\xd8")):
		return jpegSize(b)
	case len(b) >= 30 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP":
		switch string(b[12:16]) {
		case "VP8X":
			return 1 + (int(b[24]) | int(b[25])<<8 | int(b[26])<<16), 1 + (int(b[27]) | int(b[28])<<8 | int(b[29])<<16), true
		case "VP8L":
			v := binary.LittleEndian.Uint32(b[21:25])
			return 1 + int(v&0x3fff), 1 + int(v>>14&0x3fff), true
		case "VP8 ":
			return int(binary.LittleEndian.Uint16(b[26:28]) & 0x3fff), int(binary.LittleEndian.Uint16(b[28:30]) & 0x3fff), true
		}
	case isBMP(b):
		w, h := int(int32(binary.LittleEndian.Uint32(b[18:22]))), int(int32(binary.LittleEndian.Uint32(b[22:26])))
		return max(w, -w), max(h, -h), true
	}
	return 0, 0, false
}

// isBMP reports a Windows bitmap: "BM", then a header of a known size
// (12, 40, 52, 56, 108 or 124 bytes) at byte 14.
func isBMP(b []byte) bool {
	if len(b) < 26 || !bytes.HasPrefix(b, []byte("BM")) {
		return false
	}
	switch binary.LittleEndian.Uint32(b[14:18]) {
	case 12, 40, 52, 56, 108, 124:
		return true
	}
	return false
}

// jpegSize walks a JPEG's segments to its frame header (SOF0–SOF15 but
// DHT, JPG and DAC).
func jpegSize(b []byte) (int, int, bool) {
	for i := 2; i+9 < len(b); {
		if b[i] != 0xff {
			return 0, 0, false
		}
		m := b[i+1]
		if m == 0xff { // fill
			i++
			continue
		}
		if m == 0xd8 || m == 0x01 || m >= 0xd0 && m <= 0xd7 { // no length
			i += 2
			continue
		}
		if m >= 0xc0 && m <= 0xcf && m != 0xc4 && m != 0xc8 && m != 0xcc {
			return int(binary.BigEndian.Uint16(b[i+7 : i+9])), int(binary.BigEndian.Uint16(b[i+5 : i+7])), true
		}
		i += 2 + int(binary.BigEndian.Uint16(b[i+2:i+4]))
	}
	return 0, 0, false
}

var (
	pdfPageRe  = regexp.MustCompile(`/Type\s*/Page\b`)
	pdfCountRe = regexp.MustCompile(`/Count\s+(\d{1,6})`)
)

// pdfPages counts a PDF's pages: its page objects when they are in the
// open, else the largest /Count of its page trees, else one a 50 KB.
func pdfPages(pdf []byte) int {
	if n := len(pdfPageRe.FindAllIndex(pdf, -1)); n > 0 {
		return n
	}
	most := 0
	for _, m := range pdfCountRe.FindAllSubmatch(pdf, -1) {
		if n, err := strconv.Atoi(string(m[1])); err == nil {
			most = max(most, n)
		}
	}
	if most > 0 {
		return most
	}
	return max(1, (len(pdf)+pdfBytesPerPage-1)/pdfBytesPerPage)
}
