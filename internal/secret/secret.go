// Package secret reads a secret from the environment: a variable, or the
// file its _FILE twin names, so that a password or token need not stand in
// an environment file. It owns nothing else.
package secret

import (
	"fmt"
	"os"
	"strings"
)

// FromEnv reads the variable env, or the file that env_FILE names (its
// content without the final newline). Both set is an error.
func FromEnv(getenv func(string) string, env string) (string, error) {
	v, file := getenv(env), getenv(env+"_FILE")
	switch {
	case file == "":
		return v, nil
	case v != "":
		return "", fmt.Errorf("both %s and %s_FILE are set", env, env)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("%s_FILE: %w", env, err)
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}
