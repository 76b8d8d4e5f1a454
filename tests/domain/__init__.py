"""Tests of the pure domain."""
