"""Modelplane: a control plane for AI model serving, as Crossplane composition functions."""

__version__ = "0.1.0"
