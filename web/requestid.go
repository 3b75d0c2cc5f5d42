package web

import (
	"crypto/rand"
	"encoding/hex"
	"regexp"

	"github.com/labstack/echo/v4"
)

// requestIDPattern is what a caller's X-Request-Id must look like to be kept:
// short, and made of characters that need no escaping in logs, headers or
// JSON. The ID ends up in every log line and in the audit stream
// (command_context.request_id), so a client must not be able to store
// arbitrary text there; anything else is replaced by a fresh ID.
var requestIDPattern = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,64}$`)

// requestID gives every request an ID: the caller's when it is well formed
// (a proxy or client correlating its own logs), else a random one. It is
// written back into the request header too, because the request logger
// reads it from there.
func requestID(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		id := c.Request().Header.Get(echo.HeaderXRequestID)
		if !requestIDPattern.MatchString(id) {
			id = newRequestID()
		}
		c.Request().Header.Set(echo.HeaderXRequestID, id)
		c.Response().Header().Set(echo.HeaderXRequestID, id)
		return next(c)
	}
}

func newRequestID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b)
}
