// Package api owns the wire types of vmplane's REST API (docs/design.md
// §10): the resources and lists it answers with, the requests it takes, the
// events its streams carry and the shape of its errors, as JSON. The
// gateway renders them from its read-model rows; vmctl, and any other Go
// client, decodes them. The OpenAPI document the gateway serves is made
// from these types, and a test of the gateway holds the document to what
// its routes answer.
//
// A request field the server refuses a body without is tagged
// required:"true", which the document's required lists are made of;
// omitempty only says how a Go client encodes a field.
//
// The JSON field names are the contract: a field is added, never renamed.
// The package does no I/O. It imports the standard library and, should the
// API share a constant of the contract, schemas; never the gateway, vmctl,
// readmodel or a projector, so that a client gets the types without the
// server (ops/check-imports.sh holds this).
package api
