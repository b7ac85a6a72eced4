"""The library's public names are the ones listed, and each exists."""

import capsule


def test_exported_names():
    assert sorted(capsule.__all__) == capsule.__all__
    for name in capsule.__all__:
        assert hasattr(capsule, name), name


def test_library_does_not_import_the_edges():
    import pathlib
    import re

    root = pathlib.Path(capsule.__file__).parent
    pattern = re.compile(r"^\s*(from|import)\s+(functions|mcp_client|infra)\b", re.M)
    offenders = [str(p) for p in root.rglob("*.py") if pattern.search(p.read_text())]
    assert offenders == []


def test_the_service_module_still_gives_what_its_callers_import():
    """The operations live in capsule.service_* beside it; learning, capture, sync, governance
    and the client import these names from capsule.service.memory_service."""
    import capsule.service.memory_service as service

    assert service.__all__ == [
        "BULK_FROM",
        "MemoryService",
        "decode_cursor",
        "encode_cursor",
        "to_memory",
        "validate",
        "visibility_of",
    ]
    for name in service.__all__:
        assert hasattr(service, name), name
