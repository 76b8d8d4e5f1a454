"""The fleet scheduler's parts: its inputs, its outputs, pool fitting, the ledger, words.

:mod:`modelplane.domain.scheduler` puts them together; import from there.
"""
