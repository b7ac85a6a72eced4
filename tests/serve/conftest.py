import pytest

from .server import Server, capsule

SIGV4_KEY = "AKIDLOCALTEST00001"
SIGV4_SECRET = "test-secret-0123456789abcdefghij"
SIGV4_TENANT = "arn:aws:iam::000000000000:user/signer"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("serve")
    added = capsule(
        "keys", "add-sigv4", SIGV4_KEY, "--tenant", SIGV4_TENANT, data_dir=data_dir, stdin=SIGV4_SECRET + "\n"
    )
    assert added.returncode == 0, added.stderr
    srv = Server(data_dir)
    yield srv
    code = srv.stop()
    print("".join(srv.stderr))  # shown with a failing test of this module: the server's own account
    assert code == 0
