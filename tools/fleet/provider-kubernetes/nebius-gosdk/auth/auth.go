// Package auth is a stand-in: see ../go.mod.
package auth

// BearerToken is an IAM token.
type BearerToken struct{ Token string }

// PrivateKeyParser holds a service account's key.
type PrivateKeyParser struct{}

// NewPrivateKeyParser is accepted and ignored.
func NewPrivateKeyParser([]byte, string, string) PrivateKeyParser { return PrivateKeyParser{} }
