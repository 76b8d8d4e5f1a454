"""Typed models of the Modelplane API, generated from apis/. Do not edit."""
