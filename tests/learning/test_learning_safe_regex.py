import pytest

from capsule.core.errors import InvalidInput
from capsule.learning.safe_regex import MAX_INPUT_CHARS, MAX_PATTERN_CHARS, UnsafePattern, compile_safe


@pytest.mark.parametrize(
    "pattern, reason",
    [
        (r"(a+)+b", "nested quantifiers"),
        (r"(a*)*", "nested quantifiers"),
        (r"(\w+\s?)*$", "nested quantifiers"),
        (r"(.*a){12}", "nested quantifiers"),
        (r"((ab)*c)+", "nested quantifiers"),
        (r"(a|a)*", "alternation"),
        (r"(a|aa)+", "alternation"),
        (r"(|x)*y", "alternation"),
        (r"(ab|a)*c", "alternation"),
        (r"(\d+|x)+", "nested quantifiers"),
        (r"(a)\1", "backreferences"),
        (r"(?P<x>a)(?P=x)", "backreferences"),
        (r"(?=a)b", "lookahead"),
        (r"(?<!x)y", "lookahead"),
        (r"(?>a+)b", "atomic"),
        (r"a++", "possessive"),
        (r"(a)?(?(1)b|c)", "conditional"),
    ],
)
def test_catastrophic_and_unsupported_patterns_are_refused_before_running(pattern, reason):
    with pytest.raises(UnsafePattern) as caught:
        compile_safe(pattern)
    assert reason in caught.value.message
    assert caught.value.status == 422


@pytest.mark.parametrize(
    "pattern, text, found",
    [
        (r"ECONNREFUSED\s+\S*:6379", "connect ECONNREFUSED 127.0.0.1:6379", True),
        (r"(?i)cannot read propert(y|ies) of undefined", "TypeError: Cannot read properties of undefined", True),
        (r"(?:ab|cd)+e", "xxcdabe", True),
        (r"E11000 duplicate key", "E11001 duplicate key", False),
        (r"\bHTTP/\d\.\d\s+50[234]\b", "HTTP/1.1 503 Service Unavailable", True),
    ],
)
def test_ordinary_patterns_compile_and_match(pattern, text, found):
    assert compile_safe(pattern).search(text) is found


def test_polynomial_pattern_runs_in_linear_time_on_re2():
    # On Python's backtracking re this takes minutes on the capped input; RE2 never backtracks.
    assert compile_safe(r".*.*.*x").search("a" * (MAX_INPUT_CHARS * 4)) is False


def test_input_beyond_the_cap_is_not_searched():
    regex = compile_safe(r"NEEDLE")
    assert regex.search("a" * (MAX_INPUT_CHARS - 6) + "NEEDLE")
    assert not regex.search("a" * MAX_INPUT_CHARS + "NEEDLE")


@pytest.mark.parametrize(
    "pattern, message",
    [
        ("", "non-empty"),
        ("a" * (MAX_PATTERN_CHARS + 1), "at most"),
        ("[", "not a valid regex"),
        ("(", "not a valid regex"),
        (r"\p{Greek}+", ""),
    ],
)
def test_invalid_patterns_name_the_problem(pattern, message):
    with pytest.raises(InvalidInput) as caught:
        compile_safe(pattern, field="signatures.0.regexes.0")
    assert message in caught.value.message
    assert caught.value.field == "signatures.0.regexes.0"
