package caddymodule

import (
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/spf13/cobra"

	"github.com/caddy-air/caddy-air/admin"
	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/keys"
)

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
			var out admin.CreateKeyResponse
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
