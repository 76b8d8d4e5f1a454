"""Pure domain code: no I/O, no gRPC or protobuf, no generated models.

Everything here takes plain typed values (frozen dataclasses) and returns plain values,
so it is tested without requests.
"""
