"""Regenerate render_pb2.py and render_pb2.pyi from render.proto, in place."""

from modelplane.dev.proto import SOURCE_ROOT, generate

for path in generate(SOURCE_ROOT):
    print(f"generated {path.relative_to(SOURCE_ROOT)}")
