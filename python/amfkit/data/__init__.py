"""Data behind the services: SQL results as recordsets (SQLite, PostgreSQL, any DB-API).

See `amfkit.data.recordset` for the shapes each client receives and for paging.
"""

from __future__ import annotations

from .recordset import DEFAULT_PAGER, PageableResultService, Pager, RecordSet, encoder_default

__all__ = ["DEFAULT_PAGER", "PageableResultService", "Pager", "RecordSet", "encoder_default"]
