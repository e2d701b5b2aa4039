// Package responses is OpenAI's Responses format (/v1/responses, and the ChatGPT plan's Codex backend): the whole truth spillway knows of it, one folder.
package responses

// Format is the responses format's value (format.Format).
type Format struct{}
