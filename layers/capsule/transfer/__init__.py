"""Data in and out: the JSON Lines export format, its exporter and importer, importers from the originals' databases.
May import: capsule.service and everything below it.

Data in and out: the lossless JSON Lines export format, its exporter and importer, and
importers from the original projects' databases (the Vector Bridge's PostgreSQL, the first
Capsule's MongoDB).
"""

from .export import Sources, export_lines
from .importer import import_lines
from .report import DataImportResult, Refusal

__all__ = ["DataImportResult", "Refusal", "Sources", "export_lines", "import_lines", "open_sources"]


def open_sources(service) -> Sources:
    """The stores behind a built :class:`~capsule.service.memory_service.MemoryService`."""
    from ..store.sides import open_learning_store, transfer_store

    return Sources(
        service.store,
        open_learning_store(service.store, service.settings),
        transfer_store(service.store),
        policies=service.guard_policies,
    )
