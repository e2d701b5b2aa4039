package wire

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/gif"
	"image/jpeg"
	"image/png"
	"math/rand/v2"
	"strings"
	"testing"
)

// noise is an image of w × h random pixels: it does not compress, so its
// file is as large as a real screenshot's.
func noise(w, h int) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	rnd := rand.New(rand.NewPCG(7, 7))
	for i := range img.Pix {
		img.Pix[i] = uint8(rnd.UintN(256))
	}
	return img
}

// plain is an image of w × h in stripes: small once encoded, and quick to
// encode (its size is in its header all the same).
func plain(w, h int) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = uint8(i / 4 / w % 7 * 30)
	}
	return img
}

func encoded(t testing.TB, enc func(*bytes.Buffer) error) string {
	t.Helper()
	var b bytes.Buffer
	if err := enc(&b); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b.Bytes())
}

// pdf is a PDF of n pages, its page objects in the open.
func pdf(n int) string {
	var b strings.Builder
	b.WriteString("%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n")
	fmt.Fprintf(&b, "2 0 obj << /Type /Pages /Count %d /Kids [", n)
	for i := range n {
		fmt.Fprintf(&b, " %d 0 R", 3+i)
	}
	b.WriteString("] >> endobj\n")
	for i := range n {
		fmt.Fprintf(&b, "%d 0 obj << /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >> endobj\n", 3+i)
	}
	b.WriteString(strings.Repeat("% padding so that the file is large enough to be media\n", 20))
	b.WriteString("trailer << /Root 1 0 R >>\n%%EOF\n")
	return base64.StdEncoding.EncodeToString([]byte(b.String()))
}

// webpVP8X is the header of an extended WebP of w × h.
func webpVP8X(w, h int) string {
	b := []byte("RIFF\x00\x00\x00\x00WEBPVP8X\x0a\x00\x00\x00\x00\x00\x00\x00")
	b = append(b, byte(w-1), byte((w-1)>>8), byte((w-1)>>16), byte(h-1), byte((h-1)>>8), byte((h-1)>>16))
	b = append(b, make([]byte, 400)...)
	return base64.StdEncoding.EncodeToString(b)
}

// wrap76 breaks s into lines of 76, as MIME base64 is written.
func wrap76(s string) string {
	var b strings.Builder
	for len(s) > 76 {
		b.WriteString(s[:76] + "\n")
		s = s[76:]
	}
	b.WriteString(s)
	return b.String()
}

// wrap76Escaped is wrap76(s) as JSON writes it (each line break \n).
func wrap76Escaped(s string) string { return strings.ReplaceAll(wrap76(s), "\n", `\n`) }

func body(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestEstimateTokens(t *testing.T) {
	img := plain(800, 600) // 480,000 px: 640 tokens by width × height / 750
	pngB64 := encoded(t, func(b *bytes.Buffer) error { return png.Encode(b, img) })
	jpgB64 := encoded(t, func(b *bytes.Buffer) error { return jpeg.Encode(b, img, nil) })
	gifB64 := encoded(t, func(b *bytes.Buffer) error { return gif.Encode(b, plain(100, 75), nil) }) // 10 tokens
	bigPNG := encoded(t, func(b *bytes.Buffer) error { return png.Encode(b, plain(1400, 1000)) })   // 1,866 by the rule: capped
	random := make([]byte, 30000)
	for i := range random {
		random[i] = byte(i * 7919 >> 3)
	}
	randB64 := base64.StdEncoding.EncodeToString(random)
	text := strings.Repeat("word ", 2000)

	question := func(extra ...any) []any {
		return append([]any{map[string]any{"type": "text", "text": "what is it?"}}, extra...)
	}
	rows := []struct {
		name       string
		body       []byte
		media      int // the tokens the media count for
		mediaBytes int // the bytes of the strings taken for media
	}{
		{"chat image_url data URL (png)", body(t, map[string]any{"model": "m", "messages": []any{map[string]any{"role": "user", "content": question(
			map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/png;base64," + pngB64}})}}}), 640, len("data:image/png;base64,") + len(pngB64)},
		{"responses input_image (jpeg)", body(t, map[string]any{"model": "m", "input": []any{map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "input_image", "image_url": "data:image/jpeg;base64," + jpgB64}}}}}), 640, len("data:image/jpeg;base64,") + len(jpgB64)},
		{"messages base64 source (gif, small)", body(t, map[string]any{"model": "m", "max_tokens": 8, "messages": []any{map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/gif", "data": gifB64}}}}}}), 10, len(gifB64)},
		{"gemini inlineData (webp)", body(t, map[string]any{"contents": []any{map[string]any{"role": "user", "parts": []any{
			map[string]any{"inlineData": map[string]any{"mimeType": "image/webp", "data": webpVP8X(1500, 1000)}}}}}}), ImageTokens, len(webpVP8X(1500, 1000))},
		{"a large image is what the providers scale it to", body(t, map[string]any{"model": "m", "messages": []any{map[string]any{"role": "user", "content": question(
			map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/png;base64," + bigPNG}})}}}), ImageTokens, len("data:image/png;base64,") + len(bigPNG)},
		{"responses input_file pdf, 3 pages", body(t, map[string]any{"model": "m", "input": []any{map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "input_file", "filename": "a.pdf", "file_data": "data:application/pdf;base64," + pdf(3)}}}}}), 3 * PDFPageTokens, len("data:application/pdf;base64,") + len(pdf(3))},
		{"messages document pdf, 12 pages", body(t, map[string]any{"model": "m", "max_tokens": 8, "messages": []any{map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "document", "source": map[string]any{"type": "base64", "media_type": "application/pdf", "data": pdf(12)}}}}}}), 12 * PDFPageTokens, len(pdf(12))},
		{"an image data URL whose bytes say nothing of its size", body(t, map[string]any{"model": "m", "messages": []any{map[string]any{"role": "user", "content": question(
			map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/heic;base64," + randB64}})}}}), ImageTokens, len("data:image/heic;base64,") + len(randB64)},
		{"base64 in lines of 76 (MIME)", body(t, map[string]any{"model": "m", "max_tokens": 8, "messages": []any{map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/gif", "data": wrap76(gifB64)}}}}}}), 10, len(wrap76Escaped(gifB64))},
		{"base64 that is no media counts as text", body(t, map[string]any{"model": "m", "input": randB64}), 0, 0},
		{"text counts four bytes a token", body(t, map[string]any{"model": "m", "input": text}), 0, 0},
		{"not JSON: its bytes", []byte("this is not { json \" at all"), 0, 0},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			want := (len(r.body)-r.mediaBytes+3)/4 + r.media
			if got := EstimateTokens(r.body); got != want {
				t.Fatalf("%d tokens, want %d (%d bytes, %d of them media)", got, want, len(r.body), r.mediaBytes)
			}
		})
	}
}

// A 1.2 MB screenshot is about a thousand tokens, not 300,000.
func TestEstimateScreenshot(t *testing.T) {
	b64 := encoded(t, func(b *bytes.Buffer) error { return png.Encode(b, noise(640, 500)) })
	b := body(t, map[string]any{"model": "gpt-6-astra", "messages": []any{map[string]any{"role": "user", "content": []any{
		map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/png;base64," + b64}}}}}})
	if len(b) < 1_200_000 {
		t.Fatalf("the request is %d bytes", len(b))
	}
	if got := EstimateTokens(b); got < 426 || got > 500 {
		t.Fatalf("%d tokens for a 640×500 screenshot (about 426)", got)
	}
}

func FuzzEstimateTokens(f *testing.F) {
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
	f.Add([]byte(`{"url":"data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="}`))
	f.Add([]byte(`{"data":"` + strings.Repeat("/9j/", 100) + `"}`))
	f.Add([]byte(`{"a":"\"` + strings.Repeat("JVBERi0", 60) + `"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		got := EstimateTokens(b)
		if got < 0 {
			t.Fatalf("%d tokens", got)
		}
		// media only ever counts less than its bytes would, but for a
		// PDF's pages and an image's fixed cost
		if text := (len(b) + 3) / 4; got > text+len(b)/minMedia*max(ImageTokens, PDFPageTokens*len(b)) {
			t.Fatalf("%d tokens for %d bytes", got, len(b))
		}
	})
}
