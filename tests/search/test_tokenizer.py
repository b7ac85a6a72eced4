from capsule.core.text import tokens


def test_camel_and_snake_case_are_split_and_kept_whole():
    assert tokens("getUserById") == ["getuserbyid", "get", "user", "id"]
    assert tokens("max_retry_count") == ["max_retry_count", "max", "retri", "count"]


def test_error_codes_and_hostnames_stay_tokens():
    found = tokens("ENOTFOUND redis.railway.internal after E11000 and HTTP 503")
    for token in ("enotfound", "redis.railway.internal", "e11000", "11000", "http_503", "503"):
        assert token in found, token


def test_prose_is_stemmed_without_stop_words():
    assert tokens("The workers were retrying the failed deploys") == ["worker", "retri", "fail", "deploy"]


def test_query_and_document_spellings_meet():
    assert set(tokens("user id")) <= set(tokens("def getUserById(id):"))


def test_stored_term_hashes_are_the_tokens_hashes():
    """terms.encode (a word at a time, statuses found behind an RE2 gate, the last texts' words
    kept for the store after the embedder, issue 32) gives the hashes of text.tokens, in order."""
    import random

    import numpy as np

    from capsule.search import terms

    rng = random.Random(32)
    pieces = [
        "HTTP 503",
        "SQLSTATE\t40001",
        "ERR 12",
        "E 500",
        "Http 404",
        "HTTP ٥٠٣",
        "redis.railway.internal",
        "naïve",
    ]
    pieces += ["getUserById", "the", "a", "x-y", "503", "HTTP", "\n", "!", "AB  1234567"]
    texts = [" ".join(rng.choice(pieces) for _ in range(rng.randint(0, 30))) for _ in range(400)]
    for text in texts + texts:  # the second time from the kept words
        assert np.frombuffer(terms.encode(text), dtype="<i8").tolist() == terms.hashes(text).tolist(), text
