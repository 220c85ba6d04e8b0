"""Doors for code written against other AMF libraries, running on amfkit's codec.

- `amfkit.compat.pyamf`: PyAMF's and Py3AMF's public API (`import amfkit.compat.pyamf
  as pyamf`); docs/migrating.md says what it covers and what it refuses.
"""
