package dev

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/readmodel"
)

// kafkaPasswords returns the SASL passwords of the secure dev broker's
// principals, made once and kept in var/dev/kafka-passwords.json (0600) so
// that a restarted stack and a role started by hand agree on them.
func kafkaPasswords(varDir string) (map[string]string, error) {
	file := filepath.Join(varDir, "dev", "kafka-passwords.json")
	pw := map[string]string{}
	if b, err := os.ReadFile(file); err == nil {
		if err := json.Unmarshal(b, &pw); err != nil {
			return nil, fmt.Errorf("read %s: %w", file, err)
		}
	}
	changed := false
	for _, p := range []string{kafka.PrincipalAdmin, kafka.PrincipalGateway, kafka.PrincipalAgent, kafka.PrincipalProjector, kafka.PrincipalProcessor} {
		if pw[p] == "" {
			pw[p] = readmodel.NewToken()
			changed = true
		}
	}
	if changed {
		b, _ := json.MarshalIndent(pw, "", "  ")
		if err := os.WriteFile(file, b, 0o600); err != nil {
			return nil, fmt.Errorf("write %s: %w", file, err)
		}
	}
	return pw, nil
}
