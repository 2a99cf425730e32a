package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/vmplane/vmplane/api"
)

// accountCommands administer accounts and API keys (admin key needed,
// except key list of one's own account).
var accountCommands = map[string]command{
	"account create": accountCreate,
	"account list":   accountList,
	"key create":     keyCreate,
	"key list":       keyList,
	"key revoke":     keyRevoke,
}

// accountCreate: vmctl account create <id> [--name N].
func accountCreate(ctx context.Context, a *cli, fs *flag.FlagSet, args []string, getenv func(string) string) error {
	name := fs.String("name", "", "display name (default: the id)")
	pos, err := a.setup(fs, args, getenv, "account-id")
	if err != nil {
		return err
	}
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

func accountList(ctx context.Context, a *cli, fs *flag.FlagSet, args []string, getenv func(string) string) error {
	if _, err := a.setup(fs, args, getenv); err != nil {
		return err
	}
	return listAll(ctx, a, "/v1/accounts", func(w io.Writer, rows []api.Account) error {
		fmt.Fprintln(w, "ID\tNAME\tCREATED")
		for _, r := range rows {
			fmt.Fprintf(w, "%s\t%s\t%s\n", r.ID, r.Name, r.CreatedAt.Format(time.RFC3339))
		}
		return nil
	})
}

// keyCreate: vmctl key create <account> [--role user|admin] [--expires-in 720h].
// The key is printed once; it cannot be shown again.
func keyCreate(ctx context.Context, a *cli, fs *flag.FlagSet, args []string, getenv func(string) string) error {
	role := fs.String("role", "user", "user or admin")
	expires := fs.String("expires-in", "", "lifetime such as 720h (default: no expiry)")
	pos, err := a.setup(fs, args, getenv, "account-id")
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	body := map[string]string{"role": *role}
	if *expires != "" {
		body["expires_in"] = *expires
	}
	var raw json.RawMessage
	if err := a.c.call(ctx, http.MethodPost, "/v1/accounts/"+pos[0]+"/keys", nil, body, &raw); err != nil {
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

func keyList(ctx context.Context, a *cli, fs *flag.FlagSet, args []string, getenv func(string) string) error {
	pos, err := a.setup(fs, args, getenv, "account-id")
	if err != nil {
		return err
	}
	return listAll(ctx, a, "/v1/accounts/"+pos[0]+"/keys", func(w io.Writer, rows []api.APIKey) error {
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

// keyRevoke: vmctl key revoke <account> <key-id>.
func keyRevoke(ctx context.Context, a *cli, fs *flag.FlagSet, args []string, getenv func(string) string) error {
	pos, err := a.setup(fs, args, getenv, "account-id", "key-id")
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	if err := a.c.call(ctx, http.MethodDelete, "/v1/accounts/"+pos[0]+"/keys/"+pos[1], nil, nil, nil); err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "key %s revoked\n", pos[1])
	return nil
}
