"""Developer tooling: model generation, offline rendering, schema validation. Not served."""
