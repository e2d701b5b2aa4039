// Package lineio reads lines of any length, or capped, from a
// bufio.Reader: the one line reader of the event log and the report's
// text and JSONL readers.
package lineio

import "bufio"

// Read appends the next line (with its '\n', if any) to buf, however long
// it is.
func Read(br *bufio.Reader, buf []byte) ([]byte, error) { return ReadMax(br, buf, -1) }

// ReadMax appends the next line to buf, its first max bytes when max is
// not negative (the rest is read and dropped, so one huge line costs no
// memory).
func ReadMax(br *bufio.Reader, buf []byte, max int) ([]byte, error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if max < 0 || len(buf) < max {
			if max >= 0 && len(buf)+len(chunk) > max {
				buf = append(buf, chunk[:max-len(buf)]...)
			} else {
				buf = append(buf, chunk...)
			}
		}
		if err != bufio.ErrBufferFull {
			return buf, err
		}
	}
}
