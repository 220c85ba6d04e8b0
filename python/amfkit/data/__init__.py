"""Data behind the services: SQL results as recordsets (SQLite, PostgreSQL, any DB-API).

docs/data.md tells the shape each client receives, and how AS2 clients page.
"""

from __future__ import annotations

from .recordset import DEFAULT_PAGER, PageableResultService, Pager, RecordSet, encoder_default

__all__ = ["DEFAULT_PAGER", "PageableResultService", "Pager", "RecordSet", "encoder_default"]
