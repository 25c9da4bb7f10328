"""The stand-in's `anthropic.lib` (see ../__init__.py)."""
