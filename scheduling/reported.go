package scheduling

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// Bounds of what a worker (or an executor on its behalf) reports about a
// run, SPEC §15. One failure report is stored on the run, in its attempt's
// and its end's events and in each subscribed notifier's outbox document;
// unbounded, one 1 MB message became ~218 MB of writes (issue 36). A value
// past its bound is cut with a visible marker and stored, never refused: a
// failure report must not be lost because it was long.
const (
	MaxReportedMessageBytes = 4 << 10   // failure message
	MaxReportedTypeChars    = 200       // failure type (characters, not bytes)
	MaxReportedOutputBytes  = 256 << 10 // output of a completed run, as stored JSON
)

// truncationMarker is appended to a cut value; n is how many bytes of the
// original were left out.
func truncationMarker(n int) string { return fmt.Sprintf("… [truncated %d bytes]", n) }

// utf8Prefix is the longest prefix of s of at most n bytes that ends on a
// character boundary (invalid bytes count as one character each).
func utf8Prefix(s string, n int) string {
	if n >= len(s) {
		return s
	}
	if n <= 0 {
		return ""
	}
	// A character is at most utf8.UTFMax bytes: past that the bytes are
	// not UTF-8 anyway, and any cut is as good as another.
	for back := 0; back < utf8.UTFMax-1 && n > 0 && !utf8.RuneStart(s[n]); back++ {
		n--
	}
	return s[:n]
}

// BoundMessage returns msg cut to MaxReportedMessageBytes bytes, marker
// included, on a UTF-8 boundary.
func BoundMessage(msg string) string { return boundBytes(msg, MaxReportedMessageBytes) }

func boundBytes(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	// The marker's own length depends on the count it prints; a cut that
	// moves back to a character boundary only lengthens the count by the
	// bytes it drops, which a second pass accounts for.
	keep := limit - len(truncationMarker(len(s)))
	for {
		head := utf8Prefix(s, keep)
		out := head + truncationMarker(len(s)-len(head))
		if len(out) <= limit {
			return out
		}
		keep -= len(out) - limit
	}
}

// BoundType returns typ cut to MaxReportedTypeChars characters, marker
// included.
func BoundType(typ string) string {
	if utf8.RuneCountInString(typ) <= MaxReportedTypeChars {
		return typ
	}
	keepChars := MaxReportedTypeChars - utf8.RuneCountInString(truncationMarker(len(typ)))
	for {
		head, i := "", 0
		for pos := range typ {
			if i == keepChars {
				head = typ[:pos]
				break
			}
			i++
		}
		out := head + truncationMarker(len(typ)-len(head))
		if utf8.RuneCountInString(out) <= MaxReportedTypeChars {
			return out
		}
		keepChars -= utf8.RuneCountInString(out) - MaxReportedTypeChars
	}
}

// BoundOutput returns a run's output (valid JSON) as it is stored: as is
// when it fits MaxReportedOutputBytes, else a JSON string holding the
// output's first bytes as text and the marker — still JSON, still
// readable, and at most MaxReportedOutputBytes once encoded.
func BoundOutput(output json.RawMessage) json.RawMessage {
	if len(output) <= MaxReportedOutputBytes {
		return output
	}
	text := string(output)
	// Escaping can lengthen the text (quotes, control characters): cut,
	// encode, and cut again by what the encoding exceeds.
	keep := MaxReportedOutputBytes - len(truncationMarker(len(text))) - 2
	for {
		head := utf8Prefix(text, keep)
		body, err := json.Marshal(head + truncationMarker(len(text)-len(head)))
		if err != nil { // a string always encodes; keep the bound regardless
			return json.RawMessage(`null`)
		}
		if len(body) <= MaxReportedOutputBytes {
			return body
		}
		keep -= len(body) - MaxReportedOutputBytes
	}
}

// summaryExcerpt is the part of a failure message a notification's
// one-line summary repeats: its first line, at most summaryExcerptBytes
// bytes. The document's error.message carries the whole (bounded) message
// once; the summary need not carry it twice.
func summaryExcerpt(msg string) string {
	for i := 0; i < len(msg); i++ {
		if msg[i] == '\n' || msg[i] == '\r' {
			msg = msg[:i] + "…"
			break
		}
	}
	if len(msg) <= summaryExcerptBytes {
		return msg
	}
	return utf8Prefix(msg, summaryExcerptBytes-len("…")) + "…"
}

const summaryExcerptBytes = 200
