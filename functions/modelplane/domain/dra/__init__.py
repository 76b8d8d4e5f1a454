"""Kubernetes Dynamic Resource Allocation: devices and CEL device selectors."""
