// Package azure builds the URLs and credentials of Azure OpenAI (Azure AI
// Foundry) chat requests. The bodies, streams and errors are OpenAI's and
// belong to the openai dialect: Azure differs only in where a request
// goes and how it authenticates.
//
// Two URL shapes exist: the deployment path,
// {endpoint}/openai/deployments/{deployment}/chat/completions?api-version=…,
// where the deployment in the path picks the model; and the v1 path,
// {endpoint}/openai/v1/chat/completions, OpenAI's own API with no
// api-version, where the body's "model" names the deployment.
package azure

import (
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"strings"
)

// APIKeyHeader is the header that carries the resource's key.
const APIKeyHeader = "Api-Key"

// DefaultAPIVersion is the api-version of the deployment path when the
// provider sets none: the latest generally available data-plane version.
const DefaultAPIVersion = "2024-10-21"

// apiVersion is the shape of an api-version: a date, maybe "-preview".
var apiVersion = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}(-preview)?$`)

// ParseEndpoint checks and normalizes a resource endpoint as operators
// copy it from the portal: https://{resource}.openai.azure.com, with or
// without a trailing slash or an /openai or /openai/v1 suffix. Plain
// http is accepted only for loopback hosts (tests, local proxies).
func ParseEndpoint(s string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || u.Host == "" {
		return "", errors.New("azure: endpoint must be an absolute URL such as https://my-resource.openai.azure.com")
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", errors.New("azure: endpoint must have no user info, query or fragment")
	}
	switch u.Scheme {
	case "https":
	case "http":
		if h := u.Hostname(); h != "localhost" && !strings.HasPrefix(h, "127.") && h != "::1" {
			return "", errors.New("azure: endpoint must use https")
		}
	default:
		return "", errors.New("azure: endpoint must use https")
	}
	p := strings.TrimSuffix(u.Path, "/")
	p = strings.TrimSuffix(p, "/openai/v1")
	p = strings.TrimSuffix(p, "/openai")
	return u.Scheme + "://" + u.Host + p, nil
}

// CheckAPIVersion reports whether v is an api-version's shape.
func CheckAPIVersion(v string) error {
	if !apiVersion.MatchString(v) {
		return errors.New("azure: api-version must be a date such as 2024-10-21, maybe with -preview")
	}
	return nil
}

// DeploymentURL is the URL of operation (such as "chat/completions" or
// "embeddings") on deployment at endpoint (as ParseEndpoint returns it),
// with apiVersion (DefaultAPIVersion if empty).
func DeploymentURL(endpoint, deployment, operation, apiVersion string) string {
	if apiVersion == "" {
		apiVersion = DefaultAPIVersion
	}
	return endpoint + "/openai/deployments/" + url.PathEscape(deployment) + "/" + operation + "?api-version=" + url.QueryEscape(apiVersion)
}

// V1URL is the URL of operation on the v1 path at endpoint, where the
// body's model names the deployment.
func V1URL(endpoint, operation string) string {
	return endpoint + "/openai/v1/" + operation
}

// SetAuth writes the key header into h.
func SetAuth(h http.Header, key string) {
	h[APIKeyHeader] = []string{key}
}
