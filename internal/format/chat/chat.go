// Package chat is OpenAI's Chat Completions format (/v1/chat/completions): the whole truth spillway knows of it, one folder.
package chat

// Format is the chat format's value (format.Format).
type Format struct{}
