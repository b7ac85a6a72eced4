"""capsule.learning's public names are the ones listed, and each exists."""

import capsule.learning


def test_exported_names():
    assert sorted(capsule.learning.__all__) == capsule.learning.__all__
    for name in capsule.learning.__all__:
        assert hasattr(capsule.learning, name), name
