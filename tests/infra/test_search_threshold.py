"""The stack sets the size above which a project is searched through Atlas's indexes."""

from __future__ import annotations

from capsule.config import Settings, index_budget_mb
from functions.routes import by_name
from infra.stack import StackOptions


def functions(template):
    return [r["Properties"] for r in template["Resources"].values() if r["Type"] == "AWS::Lambda::Function"]


def test_every_function_gets_the_threshold_and_a_warm_index_budget_below_its_memory(template):
    for props in functions(template):
        env = props["Environment"]["Variables"]
        assert env["CAPSULE_MONGODB_VECTOR_SEARCH_MIN"] == str(StackOptions.vector_search_min)
        # Lambda sets AWS_LAMBDA_FUNCTION_MEMORY_SIZE; the settings derive the budget from it.
        settings = Settings.from_env(
            {
                **{k: v for k, v in env.items() if isinstance(v, str)},
                "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(props["MemorySize"]),
            }
        )
        assert settings.mongodb_vector_search_min == StackOptions.vector_search_min
        assert settings.index_memory_mb == index_budget_mb(props["MemorySize"]) < props["MemorySize"]


def test_the_default_threshold_fits_well_inside_the_search_functions_budget():
    per_memory_kib = 18.5  # measured decoded size of one memory (issue 13)
    budget_mb = index_budget_mb(by_name("search").memory_mb)
    assert StackOptions.vector_search_min * per_memory_kib / 1024 < budget_mb / 2
