package caddymodule

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// TestMockCloudsCaddyfile: air_mock's bedrock block and azure_key parse
// into its config, and a bedrock block without its credentials fails
// the load.
func TestMockCloudsCaddyfile(t *testing.T) {
	for i, tc := range []struct {
		input    string
		bedrock  *MockBedrock
		azureKey string
		wantErr  string // "" when it provisions; "parse" for a parse error
	}{
		{input: "air_mock {\n bedrock {\n region us-east-1\n access_key_id AKID\n secret_access_key s\n retry_after 7s\n }\n azure_key az\n}",
			bedrock: &MockBedrock{Region: "us-east-1", AccessKeyID: "AKID", SecretAccessKey: "s", RetryAfter: caddy.Duration(7 * time.Second)}, azureKey: "az"},
		{input: "air_mock {\n azure_key az\n}", azureKey: "az"},
		{input: "air_mock {\n bedrock {\n region us-east-1\n access_key_id AKID\n }\n}",
			bedrock: &MockBedrock{Region: "us-east-1", AccessKeyID: "AKID"}, wantErr: "bedrock needs region, access_key_id and secret_access_key"},
		{input: "air_mock {\n bedrock us-east-1\n}", wantErr: "parse"},
		{input: "air_mock {\n bedrock {\n zone x\n }\n}", wantErr: "parse"},
		{input: "air_mock {\n azure_key\n}", wantErr: "parse"},
	} {
		var m Mock
		err := m.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tc.input))
		if (err != nil) != (tc.wantErr == "parse") {
			t.Errorf("Test %d: parse error %v", i, err)
			continue
		}
		if err != nil {
			continue
		}
		if !reflect.DeepEqual(m.Bedrock, tc.bedrock) || m.AzureKey != tc.azureKey {
			t.Errorf("Test %d: bedrock %+v azure_key %q", i, m.Bedrock, m.AzureKey)
		}
		_, err = provisionMock(t, tc.input)
		if (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("Test %d: provision error %v, want %q", i, err, tc.wantErr)
		}
	}
}
