// Package gosdk is a stand-in: see go.mod.
package gosdk

import (
	"context"
	"errors"

	"github.com/nebius/gosdk/auth"
)

// ErrUnavailable is what every call returns.
var ErrUnavailable = errors.New("Nebius identity is not built into this provider-kubernetes (modelplane fleet)")

// SDK never exists.
type SDK struct{}

// Option configures New.
type Option func()

// Reader reads credentials.
type Reader struct{}

// New fails.
func New(context.Context, ...Option) (*SDK, error) { return nil, ErrUnavailable }

// WithCredentials is accepted and ignored.
func WithCredentials(Reader) Option { return func() {} }

// ServiceAccountReader is accepted and ignored.
func ServiceAccountReader(auth.PrivateKeyParser) Reader { return Reader{} }

// BearerToken fails.
func (*SDK) BearerToken(context.Context) (auth.BearerToken, error) {
	return auth.BearerToken{}, ErrUnavailable
}
