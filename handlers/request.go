package handlers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tidelinehq/tideline/scheduling"
)

// decodeJSON reads a JSON body strictly: unknown fields and trailing data
// are 400s, like malformed JSON. An empty body decodes as {} when
// emptyOK, so that optional bodies (trigger, resume) may be left out.
func decodeJSON(c echo.Context, dst any, emptyOK bool) error {
	body, err := io.ReadAll(c.Request().Body)
	if err != nil {
		var maxErr *http.MaxBytesError
		if errors.As(err, &maxErr) || errors.Is(err, echo.ErrStatusRequestEntityTooLarge) {
			return echo.NewHTTPError(http.StatusRequestEntityTooLarge, "request body is larger than 1 MiB")
		}
		return &BadRequestError{Code: scheduling.CodeBadRequest, Message: "could not read the request body"}
	}
	if len(bytes.TrimSpace(body)) == 0 {
		if emptyOK {
			return nil
		}
		return &BadRequestError{Code: scheduling.CodeInvalidJSON, Message: "request body is empty; send a JSON object"}
	}
	// A body in any other type used to be read as a form and dropped (curl
	// sends form-urlencoded by default), so a pause lost its reason and a
	// trigger its override; refusing it also stops cross-site "simple"
	// requests, which cannot send application/json.
	if !isJSONMediaType(c.Request().Header.Get(echo.HeaderContentType)) {
		return echo.NewHTTPError(http.StatusUnsupportedMediaType, "send the body as JSON with Content-Type: application/json")
	}
	// Neither database stores NUL in text, so refuse it here as bad input
	// rather than fail later on the way to the database.
	if hasNULEscape(body) {
		return &BadRequestError{Code: scheduling.CodeInvalidJSON, Message: "JSON strings may not contain NUL characters (\\u0000)"}
	}
	if key, ok := duplicateKey(body); ok {
		return &BadRequestError{Code: scheduling.CodeInvalidJSON, Message: fmt.Sprintf("duplicate key %q: every key may appear once per object", key)}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return &BadRequestError{Code: scheduling.CodeInvalidJSON, Message: describeJSONError(err)}
	}
	if dec.More() {
		return &BadRequestError{Code: scheduling.CodeInvalidJSON, Message: "request body has data after the JSON object"}
	}
	return nil
}

// isJSONMediaType accepts application/json and the +json types, with any
// parameters (charset).
func isJSONMediaType(contentType string) bool {
	mediaType, _, err := mime.ParseMediaType(contentType)
	return err == nil && (mediaType == echo.MIMEApplicationJSON || strings.HasSuffix(mediaType, "+json"))
}

// duplicateKey finds the first key that appears twice in one JSON object,
// named by its path ("spec.timezone"). encoding/json keeps the last one
// silently, so {"schedule_id":"a","schedule_id":"b"} would mean b to us and
// a to whoever read the document first. Malformed JSON reports nothing here:
// the decoder explains it better.
func duplicateKey(body []byte) (string, bool) {
	type frame struct {
		object    bool
		expectKey bool
		key       string
		keys      map[string]bool
	}
	var stack []*frame
	path := func(key string) string {
		parts := make([]string, 0, len(stack))
		for _, f := range stack[:len(stack)-1] {
			if f.object {
				parts = append(parts, f.key)
			}
		}
		return strings.Join(append(parts, key), ".")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	for {
		tok, err := dec.Token()
		if err != nil {
			return "", false
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			continue
		}
		if top != nil && top.object && top.expectKey {
			key, _ := tok.(string)
			if top.keys[key] {
				return path(key), true
			}
			top.keys[key], top.key, top.expectKey = true, key, false
			continue
		}
		if top != nil && top.object {
			top.expectKey = true // this token is the value; a key comes next
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{object: true, expectKey: true, keys: map[string]bool{}})
		case json.Delim('['):
			stack = append(stack, &frame{})
		}
	}
}

// describeJSONError turns decoder errors into messages a client can act on
// without exposing Go type names.
func describeJSONError(err error) string {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fmt.Sprintf("malformed JSON at byte %d", syntax.Offset)
	case errors.As(err, &typ):
		if typ.Field != "" {
			return fmt.Sprintf("field %q must be %s, not %s", typ.Field, jsonKind(typ.Type.Kind().String()), typ.Value)
		}
		return fmt.Sprintf("the body must be a JSON object, not %s", typ.Value)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "malformed JSON: unexpected end of input"
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return "unknown field " + strings.TrimPrefix(err.Error(), "json: unknown field ")
	}
	return "malformed JSON"
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "int", "int64", "int32", "uint", "uint64", "float64":
		return "a number"
	case "bool":
		return "a boolean"
	case "map", "struct":
		return "an object"
	case "slice", "array":
		return "an array"
	}
	return "another type"
}

// queryInt parses an optional integer query parameter; a malformed value
// is a validation error with the given code.
func queryInt(c echo.Context, name string, def int64, code string) (int64, error) {
	raw := c.QueryParam(name)
	if raw == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil {
		return 0, &scheduling.ValidationError{Code: code, Fields: map[string]string{name: "must be an integer"}}
	}
	return n, nil
}

// pauseInput reads a pause request's end, given as paused_until or its
// alias until (not both).
func pauseInput(reason, pausedUntil, until string) (scheduling.PauseInput, error) {
	in := scheduling.PauseInput{Reason: reason}
	if pausedUntil != "" && until != "" {
		return in, scheduling.NewValidationError("paused_until", "give paused_until or until, not both")
	}
	v := &scheduling.ValidationError{Code: scheduling.CodeValidationFailed}
	if t := parseTime(v, "paused_until", pausedUntil+until); !t.IsZero() {
		in.Until = &t
	}
	return in, v.OrNil()
}

// parseTime accepts any RFC 3339 instant.
func parseTime(v *scheduling.ValidationError, field, raw string) time.Time {
	if raw == "" {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, raw)
	if err != nil {
		v.Add(field, "must be an RFC 3339 time, e.g. 2026-07-16T13:00:00Z")
		return time.Time{}
	}
	return t
}

// queryList reads a comma-separated or repeated query parameter.
func queryList(c echo.Context, name string) []string {
	var out []string
	for _, v := range c.QueryParams()[name] {
		for _, part := range strings.Split(v, ",") {
			if part = strings.TrimSpace(part); part != "" {
				out = append(out, part)
			}
		}
	}
	return out
}

// hasNULEscape reports whether a JSON document holds the escape \u0000. An
// escape is real when an odd number of backslashes precede the "u": in
// "C:\\u0000" the backslash is itself escaped and no NUL is meant.
func hasNULEscape(body []byte) bool {
	lower := bytes.ToLower(body)
	for i := bytes.Index(lower, []byte("u0000")); i >= 0; {
		slashes := 0
		for j := i - 1; j >= 0 && lower[j] == '\\'; j-- {
			slashes++
		}
		if slashes%2 == 1 {
			return true
		}
		next := bytes.Index(lower[i+1:], []byte("u0000"))
		if next < 0 {
			break
		}
		i += 1 + next
	}
	return false
}

// ledgerQuery reads the occurrence ledger's query: from, to (RFC 3339),
// cursor and limit; the service applies the defaults and bounds.
func ledgerQuery(c echo.Context) (scheduling.LedgerQuery, error) {
	v := &scheduling.ValidationError{Code: scheduling.CodeValidationFailed}
	q := scheduling.LedgerQuery{Cursor: c.QueryParam("cursor")}
	// Present means given, whatever the time: 0001-01-01T00:00:00Z is
	// Go's zero time, and was read as "absent" (issue 36).
	if raw := c.QueryParam("from"); raw != "" {
		if t := parseTime(v, "from", raw); v.Fields["from"] == "" {
			q.From = &t
		}
	}
	if raw := c.QueryParam("to"); raw != "" {
		if t := parseTime(v, "to", raw); v.Fields["to"] == "" {
			q.To = &t
		}
	}
	if err := v.OrNil(); err != nil {
		return q, err
	}
	limit, err := queryInt(c, "limit", scheduling.MaxLedgerPage, scheduling.CodeInvalidLimit)
	if err != nil {
		return q, err
	}
	if limit < 1 || limit > scheduling.MaxLedgerPage {
		return q, &scheduling.ValidationError{Code: scheduling.CodeInvalidLimit, Fields: map[string]string{"limit": fmt.Sprintf("must be between 1 and %d", scheduling.MaxLedgerPage)}}
	}
	q.Limit = int(limit)
	return q, nil
}

// historyQuery reads a history page's query (docs/CONTRACT.md, "History
// paging"): limit, order (defaultOrder when absent), the cursor of that
// order (after_sequence or before_sequence) and event_type. The service
// validates and clamps; this only parses.
func historyQuery(c echo.Context, defaultOrder string) (scheduling.HistoryQuery, error) {
	q := scheduling.HistoryQuery{Order: c.QueryParam("order"), EventType: c.QueryParam("event_type")}
	if q.Order == "" {
		q.Order = defaultOrder
	}
	var err error
	if q.Limit, err = queryInt(c, "limit", scheduling.DefaultHistoryLimit, scheduling.CodeInvalidLimit); err != nil {
		return q, err
	}
	if q.AfterSequence, err = queryInt(c, "after_sequence", 0, scheduling.CodeInvalidAfterSequence); err != nil {
		return q, err
	}
	q.BeforeSequence, err = queryInt(c, "before_sequence", 0, scheduling.CodeInvalidAfterSequence)
	return q, err
}

// queryTime reads a runs-list time filter (the console's and the API's
// created_from/created_to): RFC 3339, or the datetime-local form
// ("2026-07-16T12:00", with or without seconds) read as UTC.
func queryTime(raw, field string) (*time.Time, error) {
	if raw == "" {
		return nil, nil
	}
	for _, layout := range []string{"2006-01-02T15:04", "2006-01-02T15:04:05", time.RFC3339} {
		if t, err := time.ParseInLocation(layout, raw, time.UTC); err == nil {
			return &t, nil
		}
	}
	return nil, scheduling.NewValidationError(field, "must be a date and time, e.g. 2026-07-16T12:00 (UTC)")
}
