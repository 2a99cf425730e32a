package gateway

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/vmplane/vmplane/schemas"
)

// An API key reads vmp_<keyid>_<secret>: the key id (12 lowercase hex
// characters) is public and finds the row; the secret (32 random bytes,
// base64url without padding) proves possession. Only the hash of the whole
// key is ever stored.
const (
	keyPrefix   = "vmp_"
	keyIDLen    = 12
	secretBytes = 32
)

var secretLen = base64.RawURLEncoding.EncodedLen(secretBytes)

// NewAPIKey makes a new key. key is shown once to its owner; keyID and hash
// are what the accounts topic and the api_keys table keep.
func NewAPIKey() (key, keyID, hash string, err error) {
	id := make([]byte, keyIDLen/2)
	if _, err := rand.Read(id); err != nil {
		return "", "", "", fmt.Errorf("api key id: %w", err)
	}
	secret := make([]byte, secretBytes)
	if _, err := rand.Read(secret); err != nil {
		return "", "", "", fmt.Errorf("api key secret: %w", err)
	}
	keyID = hex.EncodeToString(id)
	key = keyPrefix + keyID + "_" + base64.RawURLEncoding.EncodeToString(secret)
	return key, keyID, HashAPIKey(key), nil
}

// HashAPIKey returns the hex SHA-256 of the full key. The secret has 256
// bits of entropy, so a fast hash is enough: there is nothing to brute-force.
func HashAPIKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// ParseAPIKey checks the key's shape (vmp_<key id>_<secret>) and returns its key id.
func ParseAPIKey(key string) (keyID string, ok bool) {
	rest, ok := strings.CutPrefix(key, keyPrefix)
	if !ok || len(rest) != keyIDLen+1+secretLen || rest[keyIDLen] != '_' {
		return "", false
	}
	keyID, secret := rest[:keyIDLen], rest[keyIDLen+1:]
	for _, c := range keyID {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return "", false
		}
	}
	if _, err := base64.RawURLEncoding.DecodeString(secret); err != nil {
		return "", false
	}
	return keyID, true
}

// hashMatches compares in constant time so that the comparison leaks
// nothing about how much of a guessed hash was right.
func hashMatches(key, storedHash string) bool {
	return subtle.ConstantTimeCompare([]byte(HashAPIKey(key)), []byte(strings.ToLower(storedHash))) == 1
}

// AdminAccount makes a new admin key and the accounts.v1 records that
// create the "admin" account with it, at Unix milliseconds at: what a
// fresh installation (and a benchmark) starts from.
func AdminAccount(at int64) (key string, recs []schemas.Record, err error) {
	key, id, hash, err := NewAPIKey()
	if err != nil {
		return "", nil, err
	}
	return key, []schemas.Record{
		{Topic: schemas.TopicAccounts, Key: "admin", Value: &schemas.AccountCreated{AccountID: "admin", Name: "admin", At: at,
			Caller: schemas.SystemCaller()}},
		{Topic: schemas.TopicAccounts, Key: "admin", Value: &schemas.ApiKeyIssued{KeyID: id, AccountID: "admin", Role: "admin", Hash: hash, At: at,
			Caller: schemas.SystemCaller()}},
	}, nil
}
