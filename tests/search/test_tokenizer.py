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
