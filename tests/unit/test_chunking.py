"""Chunking: 500-800 tokens, boundaries respected, overlap, code kept whole per function."""

from __future__ import annotations

from capsule.core.text import estimate_tokens
from capsule.service.chunking import ChunkPolicy, chunk_text, looks_like_code

POLICY = ChunkPolicy()


def prose(paragraphs: int, sentences: int = 8) -> str:
    return "\n\n".join(
        " ".join(f"Paragraph {p} sentence {s} talks about caching layer number {p * 10 + s}." for s in range(sentences))
        for p in range(paragraphs)
    )


def test_short_text_is_one_chunk():
    assert chunk_text("a short note") == ["a short note"]
    assert chunk_text("   \n ") == []


def test_long_prose_chunks_are_within_bounds_and_cut_at_boundaries():
    text = prose(40)
    chunks = chunk_text(text)
    assert len(chunks) > 3
    sizes = [estimate_tokens(c) for c in chunks]
    assert max(sizes) <= POLICY.max_tokens
    assert all(s >= POLICY.min_tokens for s in sizes[:-1])
    for chunk in chunks:
        assert chunk.startswith("Paragraph") and chunk.endswith(".")  # never cut inside a sentence


def test_consecutive_chunks_overlap():
    chunks = chunk_text(prose(40))
    for before, after in zip(chunks, chunks[1:]):
        first_sentence = after.split(". ")[0]
        assert first_sentence in before


def test_everything_is_kept():
    text = prose(30)
    joined = " ".join(chunk_text(text))
    for p in range(30):
        for s in range(8):
            assert f"number {p * 10 + s}." in joined


def test_a_giant_paragraph_is_split_by_sentence():
    text = " ".join(f"Sentence {i} is about the retention limit." for i in range(600))
    chunks = chunk_text(text)
    assert len(chunks) > 1 and all(estimate_tokens(c) <= POLICY.max_tokens for c in chunks)
    assert all(c.startswith("Sentence") for c in chunks)


def test_a_text_without_any_boundary_is_still_bounded():
    text = " ".join(["word"] * 5000)
    chunks = chunk_text(text)
    assert all(estimate_tokens(c) <= POLICY.max_tokens for c in chunks) and len(chunks) >= 6


def code(functions: int) -> str:
    body = "\n".join(f"    total = total + value_{i} * {i}" for i in range(25))
    return "\n\n".join(
        f"# helper {n}\n@cached\ndef function_{n}(value):\n    total = 0\n{body}\n    return total"
        for n in range(functions)
    )


def test_code_keeps_functions_whole_with_their_decorators():
    text = code(12)
    assert looks_like_code(text, "lib.py")
    chunks = chunk_text(text, path="lib.py")
    assert len(chunks) > 1
    for chunk in chunks:
        assert chunk.count("def function_") == chunk.count("return total")  # no function cut in two
        assert chunk.count("@cached") == chunk.count("def function_")
    seen = " ".join(chunks)
    assert all(f"def function_{n}(" in seen for n in range(12))


def test_chunkings_token_count_is_the_estimate():
    """chunking counts ASCII texts without making the matches (issue 32): the same count."""
    import random

    from capsule.service import chunking

    rng = random.Random(32)
    alphabet = [chr(c) for c in range(128)] + ["é", "日", "\u00a0"]
    texts = ["", "a", " ", ".", "a.b", "..a  b__c\x1c\x1fd\x0b\x0c"]
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 80))) for _ in range(3000)]
    for text in texts:
        assert chunking.estimate_tokens(text) == estimate_tokens(text), repr(text)
