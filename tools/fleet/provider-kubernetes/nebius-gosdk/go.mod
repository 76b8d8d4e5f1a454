// A stand-in for github.com/nebius/gosdk, whose version provider-kubernetes v1.3.1
// requires (v0.2.28) the module proxy does not serve. Only the Nebius mk8s identity
// uses it, which the fleet never does: every call fails, saying so.
module github.com/nebius/gosdk

go 1.24
