//go:build tools

// Package tools pins the versions of the development tools `make check`
// runs (golangci-lint), in a module of its own so that their dependencies
// stay out of the project's go.mod.
package tools

import _ "github.com/golangci/golangci-lint/v2/cmd/golangci-lint"
