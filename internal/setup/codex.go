// Package setup points coding agents at the local spillway gateway: it merges
// a custom model provider into Codex CLI's config.toml and prints the
// environment Claude Code needs.
package setup

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"

	"github.com/pelletier/go-toml/v2/unstable"
	"github.com/spillway/spillway/internal/agentfiles"
)

const (
	// ProviderID is the Codex model provider id spillway writes.
	ProviderID = agentfiles.CodexProviderID
	// DefaultEnvKey is the variable whose value Codex sends as the Bearer key.
	DefaultEnvKey = "OPENAI_API_KEY"
	// DefaultURL is the gateway's default address (config listen 127.0.0.1:8787).
	DefaultURL = "http://127.0.0.1:8787"
	// BackupPrefix starts the name of the backups WriteCodex keeps next to
	// config.toml; the time follows as YYYYMMDD-HHMMSS.
	BackupPrefix = "config.toml.spillway-backup-"
)

// ReservedProviderIDs are built into Codex; it refuses a config.toml that
// defines [model_providers.<id>] for any of them, so setup never writes them.
var ReservedProviderIDs = []string{"openai", "ollama", "lmstudio"}

// BaseURL normalises a gateway address as given by the user: surrounding
// blanks, trailing slashes and a trailing /v1 are removed, so that
// "http://127.0.0.1:8787/v1/" and "http://127.0.0.1:8787" are the same. An
// empty string gives DefaultURL.
func BaseURL(u string) string {
	u = strings.TrimSpace(u)
	if u == "" {
		return DefaultURL
	}
	u = strings.TrimRight(u, "/")
	u = strings.TrimSuffix(u, "/v1")
	return strings.TrimRight(u, "/")
}

// CheckURL reports whether u (after BaseURL) is an absolute http(s) URL
// without query or fragment.
func CheckURL(u string) error {
	b := BaseURL(u)
	p, err := url.Parse(b)
	if err != nil {
		return fmt.Errorf("gateway URL %q: %v", u, err)
	}
	if (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" || p.RawQuery != "" || p.Fragment != "" || p.User != nil {
		return fmt.Errorf("gateway URL %q: write it like %s", u, DefaultURL)
	}
	return nil
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// CheckEnvKey reports whether name can be an environment variable name.
func CheckEnvKey(name string) error {
	if name != "" && !envName.MatchString(name) {
		return fmt.Errorf("env key %q is not an environment variable name (letters, digits and _, like %s)", name, DefaultEnvKey)
	}
	return nil
}

// rootLine is the root key CodexBlock and ApplyCodex write.
const rootLine = `model_provider = "` + ProviderID + `"` + "\n"

// wasPrefix starts the comment that keeps a replaced root model_provider.
const wasPrefix = "# spillway: was "

// CodexBlock is the TOML that routes Codex through spillway: the root key
// model_provider and the table [model_providers.spillway]. Codex requires the
// root key before the first table of config.toml; ApplyCodex puts it there.
// An empty baseURL means DefaultURL and an empty envKey DefaultEnvKey.
func CodexBlock(baseURL string, envKey string) string {
	return rootLine + "\n" + codexTable(baseURL, envKey, false)
}

// CodexChatGPTBlock is CodexBlock for Codex signed in with a ChatGPT plan:
// the provider's base_url is the gateway's /backend-api/codex and Codex
// sends its own sign-in there (requires_openai_auth), as it does to
// chatgpt.com.
func CodexChatGPTBlock(baseURL string) string {
	return rootLine + "\n" + codexTable(baseURL, "", true)
}

// codexTable is the [model_providers.spillway] table. It starts with the
// header and ends with a key/value line: ApplyCodex replaces exactly that
// range on the next run, so comments inside it are never duplicated.
func codexTable(baseURL, envKey string, chatgpt bool) string {
	if envKey == "" {
		envKey = DefaultEnvKey
	}
	var b strings.Builder
	b.WriteString("[model_providers." + ProviderID + "]\n")
	b.WriteString(`# Written by "spillway setup codex": Codex sends its requests to the local
# spillway gateway, which falls back to another model when one is at capacity.
# Undo: restore the ` + BackupPrefix + `* file kept next to this
# file, or delete this table and the root model_provider line.
name = "` + ProviderID + `"
`)
	if chatgpt {
		b.WriteString(`base_url = ` + tomlString(BaseURL(baseURL)+"/backend-api/codex") + `
wire_api = "responses"
# Codex sends its own ChatGPT sign-in (the token in auth.json) with every
# request; spillway passes it to chatgpt.com untouched and keeps it nowhere.
# Your plan's terms govern using it through a gateway.
requires_openai_auth = true
`)
	} else {
		b.WriteString(`base_url = ` + tomlString(BaseURL(baseURL)+"/v1") + `
wire_api = "responses"
# env_key names the environment variable whose value Codex sends as the key
# ("Authorization: Bearer <value>"); spillway passes it on to OpenAI. Codex
# uses this variable, not a ChatGPT sign-in, for this provider: if you signed
# in with ChatGPT, run "spillway setup codex --chatgpt" instead.
env_key = ` + tomlString(envKey) + `
`)
	}
	b.WriteString(`# spillway retries and falls back to other models itself; Codex retrying as
# well (by default 4 request and 5 stream retries) would multiply the
# attempts and delay the answer, so it retries only once.
request_max_retries = 1
stream_max_retries = 1
# spillway may hold a stream open while it waits for capacity: allow 5 minutes
# without an event before Codex gives up on it.
stream_idle_timeout_ms = 300000
`)
	return b.String()
}

// tomlString quotes s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// ParseError is a config.toml that is not valid TOML (or would not be after
// the merge). Line and Column are 1-based.
type ParseError struct {
	Line, Column int
	Msg          string
	// Context is go-toml's multi-line excerpt pointing at the error.
	Context string
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Column, e.Msg)
}

// parseError turns a go-toml error into a ParseError when it has a position.
func parseError(err error) error {
	var de *toml.DecodeError
	if errors.As(err, &de) {
		line, col := de.Position()
		return &ParseError{Line: line, Column: col, Msg: strings.TrimPrefix(de.Error(), "toml: "), Context: de.String()}
	}
	return err
}

// ApplyCodex merges CodexBlock into the text of an existing config.toml (nil
// or empty for none) and returns the new text. The root model_provider is set
// before the first table (an old value is kept as a "# spillway: was ..."
// comment), an existing [model_providers.spillway] table is replaced from its
// header to its last key, or else the table is appended. Everything else stays
// byte for byte. Applying the result again returns it unchanged.
func ApplyCodex(existing []byte, baseURL, envKey string) ([]byte, error) {
	return applyCodex(existing, baseURL, envKey, false)
}

// ApplyCodexChatGPT is ApplyCodex with the table of CodexChatGPTBlock.
func ApplyCodexChatGPT(existing []byte, baseURL string) ([]byte, error) {
	return applyCodex(existing, baseURL, "", true)
}

func applyCodex(existing []byte, baseURL, envKey string, chatgpt bool) ([]byte, error) {
	if err := CheckURL(baseURL); err != nil {
		return nil, err
	}
	if err := CheckEnvKey(envKey); err != nil {
		return nil, err
	}
	// go-toml rejects a UTF-8 byte order mark, which some Windows editors
	// write; keep it but merge the text after it.
	if bom := []byte("\uFEFF"); bytes.HasPrefix(existing, bom) {
		out, err := applyCodex(existing[len(bom):], baseURL, envKey, chatgpt)
		if err != nil {
			return nil, err
		}
		return append(bom, out...), nil
	}
	if err := toml.Unmarshal(existing, new(map[string]any)); err != nil {
		return nil, parseError(err)
	}
	nl := "\n"
	if bytes.Contains(existing, []byte("\r\n")) {
		nl = "\r\n"
	}
	eol := func(s string) string { return strings.ReplaceAll(s, "\n", nl) }

	// 1. The table: replace or append.
	doc, err := scan(existing)
	if err != nil {
		return nil, err
	}
	if err := doc.conflicts(); err != nil {
		return nil, err
	}
	out := existing
	table := eol(codexTable(baseURL, envKey, chatgpt))
	if start, end, ok := doc.providerTable(); ok {
		out = splice(out, start, end, table)
	} else {
		sep := ""
		if len(out) > 0 {
			if !bytes.HasSuffix(out, []byte("\n")) {
				sep = nl
			}
			if !bytes.HasSuffix(out, []byte("\n\n")) && !bytes.HasSuffix(out, []byte("\n\r\n")) {
				sep += nl
			}
		}
		out = splice(out, len(out), len(out), sep+table)
	}

	// 2. The root key, in the text that now has the table.
	if doc, err = scan(out); err != nil {
		return nil, fmt.Errorf("internal error: merged config.toml: %w", err)
	}
	line := eol(rootLine)
	if i := doc.rootKey("model_provider"); i >= 0 {
		kv := doc.exprs[i]
		if kv.str != ProviderID {
			start := kv.start
			if i > 0 && doc.exprs[i-1].kind == unstable.Comment && doc.exprs[i-1].end == kv.start &&
				bytes.HasPrefix(out[doc.exprs[i-1].start:], []byte(wasPrefix+"model_provider")) {
				start = doc.exprs[i-1].start // replace our own older note
			}
			old := strings.TrimRight(string(out[kv.start:kv.end]), "\r\n")
			var was strings.Builder
			for _, l := range strings.Split(old, "\n") {
				was.WriteString(wasPrefix + strings.TrimSpace(l) + nl)
			}
			out = splice(out, start, kv.end, was.String()+line)
		}
	} else {
		var at int
		text := line
		if last := doc.lastRootKeyValue(); last >= 0 {
			at = doc.exprs[last].end
			if !bytes.HasSuffix(out[:at], []byte("\n")) {
				text = nl + text
			}
		} else if first := doc.firstHeader(); first >= 0 {
			// Keep the comment block that sits right above the first table
			// with that table.
			j := first
			for j > 0 && doc.exprs[j-1].kind == unstable.Comment && doc.exprs[j-1].end == doc.exprs[j].start {
				j--
			}
			at = doc.exprs[j].start
			text += nl
		} else {
			// No table at all: cannot happen, the table was appended above.
			at = len(out)
		}
		out = splice(out, at, at, text)
	}

	if err := verify(out, baseURL, envKey, chatgpt); err != nil {
		return nil, err
	}
	return out, nil
}

// verify parses the merged text and checks the keys Codex will read.
func verify(out []byte, baseURL, envKey string, chatgpt bool) error {
	var got map[string]any
	if err := toml.Unmarshal(out, &got); err != nil {
		return fmt.Errorf("internal error: the merged config.toml does not parse: %w", parseError(err))
	}
	if envKey == "" {
		envKey = DefaultEnvKey
	}
	provs, _ := got["model_providers"].(map[string]any)
	p, _ := provs[ProviderID].(map[string]any)
	switch {
	case got["model_provider"] != ProviderID:
		return fmt.Errorf("internal error: the merged config.toml has model_provider = %v", got["model_provider"])
	case p == nil:
		return fmt.Errorf("internal error: the merged config.toml has no [model_providers.%s]", ProviderID)
	case chatgpt && (p["base_url"] != BaseURL(baseURL)+"/backend-api/codex" || p["wire_api"] != "responses" || p["requires_openai_auth"] != true || p["env_key"] != nil):
		return fmt.Errorf("internal error: the merged [model_providers.%s] has base_url %v, wire_api %v, requires_openai_auth %v", ProviderID, p["base_url"], p["wire_api"], p["requires_openai_auth"])
	case !chatgpt && (p["base_url"] != BaseURL(baseURL)+"/v1" || p["wire_api"] != "responses" || p["env_key"] != envKey):
		return fmt.Errorf("internal error: the merged [model_providers.%s] has base_url %v, wire_api %v, env_key %v", ProviderID, p["base_url"], p["wire_api"], p["env_key"])
	}
	return nil
}

func splice(b []byte, start, end int, s string) []byte {
	out := make([]byte, 0, len(b)-(end-start)+len(s))
	out = append(out, b[:start]...)
	out = append(out, s...)
	return append(out, b[end:]...)
}

// expr is one top-level TOML expression: a key/value, a [table] or
// [[array table]] header, or a comment line.
type expr struct {
	kind  unstable.Kind
	table []string // the table a key/value belongs to (nil: root)
	key   []string // the key/value's or header's (dotted) key
	str   string   // a key/value's string value
	start int      // offset of the start of its first line
	end   int      // offset just past the end of its last line (after \n)
}

type document struct {
	data  []byte
	exprs []expr
}

// scan lists the top-level expressions of a valid TOML text with their line
// ranges.
func scan(data []byte) (*document, error) {
	d := &document{data: data}
	p := unstable.Parser{KeepComments: true}
	p.Reset(data)
	var table []string
	for p.NextExpression() {
		n := p.Expression()
		e := expr{kind: n.Kind}
		var first, last unstable.Range
		switch n.Kind {
		case unstable.Comment:
			first, last = n.Raw, n.Raw
		case unstable.KeyValue, unstable.Table, unstable.ArrayTable:
			it := n.Key()
			for i := 0; it.Next(); i++ {
				k := it.Node()
				e.key = append(e.key, string(k.Data))
				if i == 0 {
					first = k.Raw
				}
				last = k.Raw
			}
			if n.Kind == unstable.KeyValue {
				e.table = table
				first, last = n.Raw, n.Raw
				if v := n.Value(); v.Kind == unstable.String {
					e.str = string(v.Data)
				}
			} else {
				table = e.key
			}
		default:
			continue
		}
		e.start = lineStart(data, int(first.Offset))
		e.end = lineEnd(data, int(last.Offset+last.Length))
		d.exprs = append(d.exprs, e)
	}
	if err := p.Error(); err != nil {
		var pe *unstable.ParserError
		if errors.As(err, &pe) {
			// Let the decoder describe it with a position.
			if err := toml.Unmarshal(data, new(map[string]any)); err != nil {
				return nil, parseError(err)
			}
		}
		return nil, err
	}
	return d, nil
}

func lineStart(b []byte, i int) int {
	return bytes.LastIndexByte(b[:i], '\n') + 1
}

func lineEnd(b []byte, i int) int {
	if j := bytes.IndexByte(b[i:], '\n'); j >= 0 {
		return i + j + 1
	}
	return len(b)
}

var providerKey = []string{"model_providers", ProviderID}

func isHeader(k unstable.Kind) bool { return k == unstable.Table || k == unstable.ArrayTable }

// providerTable finds [model_providers.spillway]: from the start of its
// header to the end of its last key/value (comments and blank lines after
// that stay, they usually introduce the next table).
func (d *document) providerTable() (start, end int, ok bool) {
	for i, e := range d.exprs {
		if e.kind != unstable.Table || !slices.Equal(e.key, providerKey) {
			continue
		}
		start, end = e.start, e.end
		for _, f := range d.exprs[i+1:] {
			if isHeader(f.kind) {
				break
			}
			if f.kind == unstable.KeyValue {
				end = f.end
			}
		}
		return start, end, true
	}
	return 0, 0, false
}

// conflicts reports definitions of model_providers.spillway that the merge
// cannot replace: dotted keys, inline tables, an array of tables.
func (d *document) conflicts() error {
	for _, e := range d.exprs {
		var full []string
		switch e.kind {
		case unstable.ArrayTable:
			full = e.key
		case unstable.KeyValue:
			full = append(slices.Clone(e.table), e.key...)
			// Keys inside [model_providers.spillway] (or a sub-table) are ours.
			if len(e.table) >= 2 && slices.Equal(e.table[:2], providerKey) {
				continue
			}
		default:
			continue
		}
		n := min(len(full), len(providerKey))
		if !slices.Equal(full[:n], providerKey[:n]) {
			continue
		}
		line := bytes.Count(d.data[:e.start], []byte("\n")) + 1
		return fmt.Errorf("line %d: %s leaves no room for a [%s] table, the only form setup can replace; write it as [table] sections (or delete it) and run setup again",
			line, describe(e), strings.Join(providerKey, "."))
	}
	return nil
}

func describe(e expr) string {
	if e.kind == unstable.ArrayTable {
		return "the array of tables [[" + strings.Join(e.key, ".") + "]]"
	}
	return "the key " + strings.Join(append(slices.Clone(e.table), e.key...), ".") + " (a dotted key or inline table)"
}

// rootKey is the index of the root key/value named name, or -1.
func (d *document) rootKey(name string) int {
	for i, e := range d.exprs {
		if isHeader(e.kind) {
			break
		}
		if e.kind == unstable.KeyValue && len(e.key) == 1 && e.key[0] == name {
			return i
		}
	}
	return -1
}

func (d *document) lastRootKeyValue() int {
	last := -1
	for i, e := range d.exprs {
		if isHeader(e.kind) {
			break
		}
		if e.kind == unstable.KeyValue {
			last = i
		}
	}
	return last
}

func (d *document) firstHeader() int {
	for i, e := range d.exprs {
		if isHeader(e.kind) {
			return i
		}
	}
	return -1
}

// WriteCodex merges CodexBlock into codexHome/config.toml (created, with its
// directory, when missing). The old content is first copied to
// codexHome/config.toml.spillway-backup-YYYYMMDD-HHMMSS (backup is "" when
// there was no file, or when the file already had exactly this setup and
// nothing was written). The new file is written atomically with mode 0600; a
// config.toml that is a symbolic link is followed, the link is kept.
func WriteCodex(codexHome, baseURL, envKey string, now time.Time) (path, backup string, err error) {
	if codexHome == "" {
		return "", "", errors.New("no Codex home directory: set CODEX_HOME or HOME")
	}
	return writeMerged(codexHome, "config.toml", now, func(old []byte) ([]byte, error) { return ApplyCodex(old, baseURL, envKey) })
}

// WriteCodexChatGPT is WriteCodex with the table of CodexChatGPTBlock.
func WriteCodexChatGPT(codexHome, baseURL string, now time.Time) (path, backup string, err error) {
	if codexHome == "" {
		return "", "", errors.New("no Codex home directory: set CODEX_HOME or HOME")
	}
	return writeMerged(codexHome, "config.toml", now, func(old []byte) ([]byte, error) { return ApplyCodexChatGPT(old, baseURL) })
}

// CodexSetUp is the sign-in the [model_providers.spillway] table of
// codexHome/config.toml is written for: "chatgpt" (requires_openai_auth =
// true, as setup codex --chatgpt writes it), "apikey" (a table without it),
// or "" (no table, no file, or a file that does not parse).
func CodexSetUp(codexHome string) string {
	b, err := os.ReadFile(filepath.Join(codexHome, "config.toml"))
	if err != nil {
		return ""
	}
	var cfg struct {
		Providers map[string]map[string]any `toml:"model_providers"`
	}
	if toml.Unmarshal(bytes.TrimPrefix(b, []byte("\uFEFF")), &cfg) != nil {
		return ""
	}
	p, ok := cfg.Providers[ProviderID]
	switch {
	case !ok:
		return ""
	case p["requires_openai_auth"] == true:
		return "chatgpt"
	}
	return "apikey"
}

// writeMerged rewrites dir/file (through a symlink) with what merge makes
// of it, keeping the old file as a backup beside it; nothing when merge
// changes nothing. It returns the file and the backup ("" for none).
func writeMerged(dir, file string, now time.Time, merge func([]byte) ([]byte, error)) (path, backup string, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", "", err
	}
	path = filepath.Join(dir, file)
	target := path
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		if target, err = filepath.EvalSymlinks(path); err != nil {
			return path, "", fmt.Errorf("%s: %w", path, err)
		}
	}
	old, err := os.ReadFile(target)
	existed := err == nil
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return path, "", err
	}
	merged, err := merge(old)
	if err != nil {
		return path, "", fmt.Errorf("%s: %w", path, err)
	}
	if existed && bytes.Equal(old, merged) {
		return path, "", nil
	}
	if existed {
		if backup, err = writeBackup(dir, file+".spillway-backup-", old, now); err != nil {
			return path, "", err
		}
	}
	if err := writeAtomic(target, merged); err != nil {
		return path, backup, err
	}
	return path, backup, nil
}

// writeBackup writes data to a new backup file, never over an older one.
func writeBackup(dir, prefix string, data []byte, now time.Time) (string, error) {
	base := filepath.Join(dir, prefix+now.Format("20060102-150405"))
	for i := 1; ; i++ {
		name := base
		if i > 1 {
			name = fmt.Sprintf("%s-%d", base, i)
		}
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, os.ErrExist) && i < 100 {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("keeping a backup: %w", err)
		}
		if _, err := f.Write(data); err != nil {
			f.Close()
			os.Remove(name)
			return "", fmt.Errorf("keeping a backup: %w", err)
		}
		if err := f.Close(); err != nil {
			os.Remove(name)
			return "", fmt.Errorf("keeping a backup: %w", err)
		}
		return name, nil
	}
}

// writeAtomic replaces path by data through a temporary file in the same
// directory and a rename, so a reader sees the old or the new file.
func writeAtomic(path string, data []byte) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), ".config.toml.spillway-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err = f.Chmod(0o600); err != nil {
		return err
	}
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
