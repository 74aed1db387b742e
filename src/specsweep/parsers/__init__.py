"""Streaming parsers of engine logs into tidy per-request rows."""
