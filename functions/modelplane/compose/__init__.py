"""One thin adapter per composite kind: request in, domain call, response out."""
