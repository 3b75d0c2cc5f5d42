package notify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"time"
)

// SignatureHeader carries a body's signature (CONTRACT §11).
const SignatureHeader = "Tideline-Signature"

// Sign returns the Tideline-Signature value for body sent at t:
// t=<unix seconds>,v1=<hex HMAC-SHA256 of "<unix seconds>.<body>">. The
// timestamp is inside the MAC so that a receiver can refuse replays.
func Sign(secret string, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts))
	mac.Write([]byte("."))
	mac.Write(body)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac.Sum(nil))
}
