// Package messages is Anthropic's Messages format (/v1/messages), with what a continuation of a broken answer needs (track and splice): the whole truth spillway knows of it, one folder.
package messages

// Format is the messages format's value (format.Format).
type Format struct{}
