package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/spf13/pflag"

	"github.com/vmplane/vmplane/api"
)

// accountCommands administer accounts and API keys (admin key needed,
// except key list of one's own account).
var accountCommands = []spec{
	{path: "account create", args: []string{"ACCOUNT"}, short: "Create an account", cmd: accountCreate, shows: api.Account{}},
	{path: "account list", short: "List accounts", cmd: accountList, shows: api.Account{}},
	{path: "account get", args: []string{"ACCOUNT"}, short: "Show an account", cmd: one(http.MethodGet, "/v1/accounts/", printAccount), shows: api.Account{}},
	{path: "key create", args: []string{"ACCOUNT"}, short: "Issue an API key; it is printed once", cmd: keyCreate, shows: api.APIKey{}},
	{path: "key list", args: []string{"ACCOUNT"}, short: "List an account's keys (never the keys)", cmd: keyList, shows: api.APIKey{}},
	{path: "key revoke", args: []string{"ACCOUNT", "KEY-ID"}, short: "Revoke an API key", cmd: keyRevoke},
}

// accountCreate: vmctl account create <id> [--name N].
func accountCreate(a *cli, fs *pflag.FlagSet) runner {
	name := fs.String("name", "", "display name (default: the id)")
	return func(ctx context.Context, pos []string) error {
		ctx, cancel := context.WithTimeout(ctx, requestTimeout)
		defer cancel()
		var raw json.RawMessage
		if err := a.c.call(ctx, http.MethodPost, "/v1/accounts", nil, map[string]string{"id": pos[0], "name": *name}, &raw); err != nil {
			return err
		}
		return a.emit(raw, func(w io.Writer) error {
			acc, err := decodeRaw[api.Account](raw)
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "account %s created\n", acc.ID)
			return nil
		})
	}
}

func printAccount(w io.Writer, acc api.Account) {
	fmt.Fprintf(w, "id:\t%s\nname:\t%s\n", acc.ID, acc.Name)
	if !acc.CreatedAt.IsZero() {
		fmt.Fprintf(w, "created:\t%s\n", acc.CreatedAt.Format(time.RFC3339))
	}
}

func accountList(a *cli, fs *pflag.FlagSet) runner {
	return func(ctx context.Context, _ []string) error {
		return listAll(ctx, a, "/v1/accounts", func(w io.Writer, rows []api.Account) error {
			fmt.Fprintln(w, "ID\tNAME\tCREATED")
			for _, r := range rows {
				fmt.Fprintf(w, "%s\t%s\t%s\n", r.ID, r.Name, r.CreatedAt.Format(time.RFC3339))
			}
			return nil
		})
	}
}

// keyCreate: vmctl key create <account> [--role user|admin] [--expires-in 720h].
// The key is printed once; it cannot be shown again.
func keyCreate(a *cli, fs *pflag.FlagSet) runner {
	role := fs.String("role", "user", "user or admin")
	expires := fs.String("expires-in", "", "lifetime such as 720h (default: no expiry)")
	return func(ctx context.Context, pos []string) error {
		ctx, cancel := context.WithTimeout(ctx, requestTimeout)
		defer cancel()
		body := map[string]string{"role": *role}
		if *expires != "" {
			body["expires_in"] = *expires
		}
		var raw json.RawMessage
		if err := a.c.call(ctx, http.MethodPost, "/v1/accounts/"+url.PathEscape(pos[0])+"/keys", nil, body, &raw); err != nil {
			return err
		}
		return a.emit(raw, func(w io.Writer) error {
			k, err := decodeRaw[api.APIKey](raw)
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "%s\n", k.Key)
			fmt.Fprintf(a.stderr, "key %s (%s of %s) issued; it is shown only this once\n", k.ID, k.Role, k.Account)
			return nil
		})
	}
}

func keyList(a *cli, fs *pflag.FlagSet) runner {
	return func(ctx context.Context, pos []string) error {
		return listAll(ctx, a, "/v1/accounts/"+url.PathEscape(pos[0])+"/keys", func(w io.Writer, rows []api.APIKey) error {
			fmt.Fprintln(w, "ID\tROLE\tEXPIRES\tREVOKED")
			for _, k := range rows {
				exp := "never"
				if k.ExpiresAt != nil {
					exp = k.ExpiresAt.Format(time.RFC3339)
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%v\n", k.ID, k.Role, exp, k.Revoked)
			}
			return nil
		})
	}
}

// keyRevoke: vmctl key revoke <account> <key-id>.
func keyRevoke(a *cli, fs *pflag.FlagSet) runner {
	return func(ctx context.Context, pos []string) error {
		ctx, cancel := context.WithTimeout(ctx, requestTimeout)
		defer cancel()
		if err := a.c.call(ctx, http.MethodDelete, "/v1/accounts/"+url.PathEscape(pos[0])+"/keys/"+url.PathEscape(pos[1]), nil, nil, nil); err != nil {
			return err
		}
		fmt.Fprintf(a.stdout, "key %s revoked\n", pos[1])
		return nil
	}
}
