package kubeletclient

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// DefaultMaxResponseBytes bounds what the client reads of one answer — a kubelet's /pods or
// another read endpoint, the node proxy's, a Node LIST — unless Options.MaxResponseBytes says
// otherwise. A node's /pods is a few MiB at most (110 pods by default, 250 at the kubelet's
// usual maximum); 64 MiB leaves room for large specs and thousands of Nodes, and stops a server
// that answers without end before it fills the agent's memory.
const DefaultMaxResponseBytes int64 = 64 << 20

// maxErrorBodyBytes bounds what is read of an error answer (a 401, a 403, a redirect): the
// kubelet's are one line, and at most maxBodyShown bytes of it are quoted anyway.
const maxErrorBodyBytes int64 = 64 << 10

// maxTokenResponseBytes bounds the TokenRequest's answer: a token and a few fields, a few KiB.
const maxTokenResponseBytes int64 = 1 << 20

// TooLargeError says an answer was longer than the client reads: it is refused, never cut.
type TooLargeError struct {
	What  string // "the kubelet's answer", "the TokenRequest's answer"
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s is longer than %d bytes, the most this client reads (Options.MaxResponseBytes): not read", e.What, e.Limit)
}

// readAtMost reads r to its end, or fails with a TooLargeError once it holds more than limit
// bytes.
func readAtMost(r io.Reader, limit int64, what string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return data, err
	}
	if int64(len(data)) > limit {
		return nil, &TooLargeError{What: what, Limit: limit}
	}
	return data, nil
}

// maxBodyShown bounds how much of an error body is quoted.
const maxBodyShown = 512

// shownBody is an error body as the reader sees it: trimmed, cut if long, control characters
// escaped. unread says the client stopped reading it (readErrorBody): it was longer still.
func shownBody(body string, unread bool) string {
	body = strings.TrimSpace(body)
	more := ""
	switch {
	case unread:
		more = fmt.Sprintf("… (longer than %d bytes: the rest was not read)", maxErrorBodyBytes)
	case len(body) > maxBodyShown:
		more = fmt.Sprintf("… (%d more bytes)", len(body)-maxBodyShown)
	}
	if len(body) > maxBodyShown {
		body = body[:maxBodyShown]
	}
	if body == "" {
		return "(empty body)"
	}
	return Printable(body, false) + more // a server's words: no control characters reach the terminal
}

// QuotedBody is a server's error text as the client quotes it in an error: trimmed, cut after
// 512 bytes, control characters escaped.
func QuotedBody(body string) string { return shownBody(body, false) }

// readErrorBody reads an error answer's body up to maxErrorBodyBytes; unread says there was
// more, which the error then says (shownBody) rather than cutting it without a word.
func readErrorBody(r io.Reader) (text string, unread bool, err error) {
	data, err := io.ReadAll(io.LimitReader(r, maxErrorBodyBytes+1))
	if err != nil {
		return "", false, err
	}
	unread = int64(len(data)) > maxErrorBodyBytes
	return string(data[:min(int64(len(data)), maxErrorBodyBytes)]), unread, nil
}

// limitBodies wraps a transport so that no response body yields more than limit bytes: past it,
// Read fails with a TooLargeError, and client-go's Do returns that error instead of the answer.
// A watch is a stream meant to last: it is exempt, and client-go's streaming decoder bounds each
// of its events instead (16 MiB, k8s.io/apimachinery/pkg/runtime/serializer/streaming).
func limitBodies(limit int64) func(http.RoundTripper) http.RoundTripper {
	return func(rt http.RoundTripper) http.RoundTripper {
		return &wrapper{base: rt, roundTrip: func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			if err != nil || req.URL.Query().Get("watch") == "true" {
				return resp, err
			}
			resp.Body = &limitedBody{ReadCloser: resp.Body, left: limit, err: &TooLargeError{What: "the apiserver's answer to " + req.Method + " " + req.URL.Path, Limit: limit}}
			return resp, nil
		}}
	}
}

// limitedBody is a response body that fails once more than left bytes were read.
type limitedBody struct {
	io.ReadCloser
	left int64
	err  error
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, b.err
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1] // one byte more than allowed says there is more
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return 0, b.err
	}
	return n, err
}

// Printable is text from a server (an error body, a name, a certificate's field) made safe to
// print on a terminal: control characters and invalid UTF-8 are written as Go escapes (\x1b,
// \u009b), so that what a server sends cannot move the cursor, rewrite a line or hide text.
// Newlines and tabs stay only where keepNewlines says (multi-line hints).
func Printable(s string, keepNewlines bool) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			fmt.Fprintf(&b, `\x%02x`, s[i]) // a byte that is not UTF-8
		case keepNewlines && (r == '\n' || r == '\t'), !unicode.IsControl(r) && !isInvisibleFormat(r):
			b.WriteRune(r)
		default:
			q := strconv.QuoteRune(r) // '\x1b', '\u009b'
			b.WriteString(q[1 : len(q)-1])
		}
	}
	return b.String()
}

// isInvisibleFormat is a character that changes how a line reads without showing itself: the
// bidirectional overrides and isolates (a "Trojan Source" reordering).
func isInvisibleFormat(r rune) bool {
	return (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}
