package bedrock

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// SigningService is the SigV4 service name of Bedrock Runtime.
const SigningService = "bedrock"

// Signer signs requests to Bedrock Runtime in one region with SigV4.
// It is safe for concurrent use.
type Signer struct {
	region string
	creds  aws.CredentialsProvider
	signer *v4.Signer
	// now is the signing clock (time.Now; a test's fixed clock).
	now func() time.Time
}

// NewSigner returns a signer for region with creds, which it caches and
// refreshes before they expire (aws.CredentialsCache).
func NewSigner(region string, creds aws.CredentialsProvider) (*Signer, error) {
	if region == "" {
		return nil, errors.New("bedrock: a region is required")
	}
	if creds == nil {
		return nil, errors.New("bedrock: credentials are required")
	}
	if _, ok := creds.(*aws.CredentialsCache); !ok {
		creds = aws.NewCredentialsCache(creds)
	}
	return &Signer{region: region, creds: creds, signer: v4.NewSigner(), now: time.Now}, nil
}

// StaticCredentials are fixed keys: an access key id, its secret and,
// for temporary keys, a session token.
func StaticCredentials(accessKeyID, secretKey, sessionToken string) aws.CredentialsProvider {
	return credentials.NewStaticCredentialsProvider(accessKeyID, secretKey, sessionToken)
}

// DefaultCredentials are the AWS SDK's default chain: the environment
// (AWS_ACCESS_KEY_ID and the rest), the shared config and credentials
// files (AWS_PROFILE), web identity, SSO, and the ECS or EC2 role. region
// is where the chain calls STS, when a role must be assumed.
func DefaultCredentials(ctx context.Context, region string) (aws.CredentialsProvider, error) {
	cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion(region))
	if err != nil {
		return nil, err
	}
	if cfg.Credentials == nil {
		return nil, errors.New("bedrock: the default AWS credential chain found no credentials")
	}
	return cfg.Credentials, nil
}

// Region is the region the signer signs for.
func (s *Signer) Region() string { return s.region }

// Sign signs req, whose body is body, in place: it sets X-Amz-Date,
// X-Amz-Security-Token for temporary keys and Authorization. Every
// header set before the call is signed; set them all first, and set
// req.ContentLength (http.NewRequest does), which is signed too. The
// request's context bounds a credentials refresh.
func (s *Signer) Sign(req *http.Request, body []byte) error {
	creds, err := s.creds.Retrieve(req.Context())
	if err != nil {
		return errors.New("bedrock: retrieving aws credentials: " + err.Error())
	}
	sum := sha256.Sum256(body)
	return s.signer.SignHTTP(req.Context(), creds, req, hex.EncodeToString(sum[:]), SigningService, s.region, s.now())
}
