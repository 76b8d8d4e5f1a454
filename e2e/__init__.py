"""End-to-end tests on a real control plane: see the README's "End-to-end tests" and tools/e2e/."""
