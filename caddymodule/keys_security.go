package caddymodule

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/spf13/cobra"

	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/gateway"
	"github.com/caddy-air/caddy-air/keys"
)

// regenerateRequest is the body of POST /air/keys/<id>/regenerate.
type regenerateRequest struct {
	// Grace is how long the old secret keeps working, a Caddy duration
	// such as "24h"; empty or "0": it stops at once.
	Grace string `json:"grace,omitempty"`
}

// handleRegenerate answers POST /air/keys/<id>/regenerate: the key with
// its new secret (shown once), as a create answers.
func handleRegenerate(w http.ResponseWriter, r *http.Request, st *gateway.Shared, id string) error {
	if r.Method != http.MethodPost {
		return apiErr(http.StatusMethodNotAllowed, fmt.Errorf("method %s not allowed", r.Method))
	}
	var req regenerateRequest
	if r.ContentLength != 0 {
		if err := decodeAdminBody(w, r, &req, true, "regenerate request"); err != nil {
			return err
		}
	}
	var grace time.Duration
	if req.Grace != "" {
		d, err := caddy.ParseDuration(req.Grace)
		if err != nil {
			return apiErr(http.StatusBadRequest, fmt.Errorf("grace: bad duration %q", req.Grace))
		}
		grace = d
	}
	secret, k, err := st.RegenerateKey(r.Context(), id, grace)
	switch {
	case errors.Is(err, keys.ErrNoSuchKey):
		return apiErr(http.StatusNotFound, fmt.Errorf("no key with id %q", id))
	case errors.Is(err, keys.ErrRevoked):
		return apiErr(http.StatusConflict, fmt.Errorf("key %s is revoked: create a new one", id))
	case errors.Is(err, keys.ErrBadGrace):
		return apiErr(http.StatusBadRequest, err)
	case err != nil:
		return apiErr(http.StatusInternalServerError, err)
	}
	return writeAdminJSON(w, http.StatusOK, createKeyResponse{Key: k, Secret: secret})
}

// checkClientIP refuses the request when its key has an allow-list that
// does not hold the client's address: Caddy's client_ip, which is the
// connection's peer unless the server's trusted_proxies let a header name
// the client.
func checkClientIP(r *http.Request, k *keys.Key) *apierror.Error {
	if len(k.AllowIPs) == 0 {
		return nil
	}
	ip, _ := caddyhttp.GetVar(r.Context(), caddyhttp.ClientIPVarKey).(string)
	if k.AllowsIP(ip) {
		return nil
	}
	return apierror.New(http.StatusForbidden, apierror.TypePermission, "ip_not_allowed", (&keys.ErrIPNotAllowed{IP: ip}).Error())
}

// regenerateCommand is `caddy air keys regenerate <id> [--grace 24h]`.
func regenerateCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "regenerate <key id> [--grace <duration>]",
		Short: "Gives a key a new secret and prints it once, on the last line; the old one works until the grace ends",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			grace, _ := cmd.Flags().GetString("grace")
			var out createKeyResponse
			body := fmt.Appendf(nil, `{"grace":%q}`, grace)
			if err := adminCall(cmd, http.MethodPost, "/air/keys/"+url.PathEscape(args[0])+"/regenerate", body, &out); err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "id:      %s\nuser:    %s\n", out.ID, out.User)
			if out.PreviousSecretUntil != nil {
				fmt.Fprintf(w, "the old secret works until %s\n", out.PreviousSecretUntil.Format(time.RFC3339))
			}
			fmt.Fprintln(w, "Store this key now: it is not shown again.")
			fmt.Fprintln(w, out.Secret)
			return nil
		},
	}
	cmd.Flags().String("grace", "0s", "How long the old secret keeps working, e.g. 24h (default: it stops at once)")
	return cmd
}
