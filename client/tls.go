package client

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
)

// isTLSError reports a failed TLS handshake or certificate check.
func isTLSError(err error) bool {
	var (
		verify   *tls.CertificateVerificationError
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
		header   tls.RecordHeaderError
	)
	return errors.As(err, &verify) || errors.As(err, &unknown) || errors.As(err, &hostname) ||
		errors.As(err, &invalid) || errors.As(err, &header)
}

// IsTLSError reports whether err is a TLS failure: an untrusted or
// mismatched certificate, or a plain-HTTP server spoken to over https.
func IsTLSError(err error) bool { return isTLSError(err) }
