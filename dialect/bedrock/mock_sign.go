package bedrock

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// maxClockSkew is how far a request's X-Amz-Date may be from the fake's
// clock, as AWS allows.
const maxClockSkew = 5 * time.Minute

// sigV4 is the parsed Authorization header of a SigV4 request.
type sigV4 struct {
	accessKeyID, date, region, service string
	signedHeaders                      []string
	signature                          string
}

// parseAuthorization reads an AWS4-HMAC-SHA256 Authorization header.
func parseAuthorization(h string) (sigV4, error) {
	var s sigV4
	rest, ok := strings.CutPrefix(h, "AWS4-HMAC-SHA256 ")
	if !ok {
		return s, errors.New("Authorization header requires the AWS4-HMAC-SHA256 algorithm")
	}
	for part := range strings.SplitSeq(rest, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "Credential":
			f := strings.Split(v, "/")
			if len(f) != 5 || f[4] != "aws4_request" {
				return s, errors.New("Authorization header has a malformed Credential")
			}
			s.accessKeyID, s.date, s.region, s.service = f[0], f[1], f[2], f[3]
		case "SignedHeaders":
			s.signedHeaders = strings.Split(v, ";")
		case "Signature":
			s.signature = v
		}
	}
	if s.accessKeyID == "" || len(s.signedHeaders) == 0 || s.signature == "" {
		return s, errors.New("Authorization header requires Credential, SignedHeaders and Signature")
	}
	return s, nil
}

// verifySignature recomputes r's SigV4 signature with the fake's secret,
// from the headers the request says it signed, its X-Amz-Date and body,
// as Bedrock does, and reports why it does not match. The error type is
// UnrecognizedClientException for an unknown key, InvalidSignatureException
// otherwise.
func (s *Server) verifySignature(r *http.Request, body []byte) (errType string, err error) {
	const invalid = "InvalidSignatureException"
	a, err := parseAuthorization(r.Header.Get("Authorization"))
	if err != nil {
		return "IncompleteSignatureException", err
	}
	if a.accessKeyID != s.AccessKeyID {
		return "UnrecognizedClientException", errors.New("The security token included in the request is invalid.")
	}
	amzDate := r.Header.Get("X-Amz-Date")
	t, err := time.Parse("20060102T150405Z", amzDate)
	if err != nil || a.date != amzDate[:8] {
		return invalid, errors.New("X-Amz-Date is missing or does not match the credential scope")
	}
	if d := time.Since(t); d > maxClockSkew || d < -maxClockSkew {
		return invalid, errors.New("Signature expired: " + amzDate + " is not within five minutes of the server's time")
	}
	if a.service != SigningService || a.region != s.Region {
		return invalid, errors.New("Credential should be scoped to a valid region and the service " + SigningService)
	}
	u := *r.URL
	u.Host = r.Host
	req := &http.Request{Method: r.Method, URL: &u, Host: r.Host, Header: http.Header{}}
	for _, name := range a.signedHeaders {
		switch name {
		case "host":
		case "content-length":
			req.ContentLength = r.ContentLength
		default:
			req.Header[http.CanonicalHeaderKey(name)] = r.Header.Values(name)
		}
	}
	creds := aws.Credentials{AccessKeyID: s.AccessKeyID, SecretAccessKey: s.SecretKey, SessionToken: r.Header.Get("X-Amz-Security-Token")}
	sum := sha256.Sum256(body)
	if err := v4.NewSigner().SignHTTP(r.Context(), creds, req, hex.EncodeToString(sum[:]), a.service, a.region, t); err != nil {
		return invalid, err
	}
	want, _ := parseAuthorization(req.Header.Get("Authorization"))
	if strings.Join(want.signedHeaders, ";") != strings.Join(a.signedHeaders, ";") ||
		subtle.ConstantTimeCompare([]byte(want.signature), []byte(a.signature)) != 1 {
		return invalid, errors.New("The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method.")
	}
	return "", nil
}
