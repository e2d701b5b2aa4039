// Package gemini is Google's Gemini API format (generateContent and streamGenerateContent: the model in the URL path; the Code Assist envelope of Gemini CLI's sign-in): the whole truth spillway knows of it, one folder.
package gemini

// Format is the gemini format's value (format.Format).
type Format struct{}
