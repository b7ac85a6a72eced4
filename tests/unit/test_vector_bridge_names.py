"""The Vector Bridge name mapping and the nearest-name suggestions, as pure functions."""

from __future__ import annotations

import pytest

from capsule_cli import strict_cli
from mcp_client import strict_tools, vector_bridge

SEARCH_FIELDS = {"query", "project", "all_projects", "k", "mode", "tags", "component", "category"}


def test_its_names_become_ours_and_its_integer_ids_strings():
    given = {"project_root": "/Users/me/app", "query": "q", "global": True, "limit": 3}
    assert vector_bridge.translate("memory_search", given, SEARCH_FIELDS) == {
        "project": "/Users/me/app",
        "query": "q",
        "all_projects": True,
        "k": 3,
    }
    assert vector_bridge.translate("memory_feedback", {"chunk_id": 123, "helpful": True}, {"id", "helpful"}) == {
        "id": "123",
        "helpful": True,
    }
    assert vector_bridge.translate("solution_apply", {"solution_id": True}, {"solution_id"}) == {"solution_id": True}


def test_a_name_maps_only_where_the_tool_has_its_target():
    assert vector_bridge.translate("memory_projects", {"project_root": "/x"}, {"max_chars"}) == {"project_root": "/x"}
    assert vector_bridge.renames("memory_list", {"project", "limit"}) == {"project_root": "project"}


def test_both_names_at_once_are_refused():
    with pytest.raises(vector_bridge.Conflict, match="'project' or 'project_root'"):
        vector_bridge.translate("memory_search", {"project": "a", "project_root": "b"}, SEARCH_FIELDS)


def test_the_published_schema_takes_integer_ids_and_lists_only_our_names():
    schema = {"properties": {"id": {"type": "string", "title": "Id"}, "project": {"type": "string"}}}
    published = vector_bridge.published("memory_forget", schema)["properties"]
    assert published["id"]["anyOf"] == [{"type": "string"}, {"type": "integer"}]
    # A call with its names is answered in its own dialect (mcp_client/vb_dialect.py): listing them too
    # would cost every conversation their size.
    assert "project_root" not in published


@pytest.mark.parametrize(
    "tool, name, known, nearest",
    [
        ("memory_pin", "pinned", ["action", "id"], "action"),
        ("memory_list", "pinned", ["cursor", "limit", "pinned_only", "project"], "pinned_only"),
        ("memory_search", "limt", ["k", "limit", "query"], "limit"),
        ("solution_search", "error_msg", ["category", "error", "error_message", "k"], "error_message"),
    ],
)
def test_the_nearest_known_name(tool, name, known, nearest):
    assert strict_tools.nearest(tool, name, known) == nearest


def test_the_nearest_option():
    assert strict_cli.nearest("--pinned", ["--pin", "--path", "--project"]) == "--pin"
