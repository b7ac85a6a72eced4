"""Builds tests/capture/coding_sessions.json: labelled events of coding-agent sessions.

Hand-written sentences (decisions, fixes, causes of errors, dead ends, conventions,
preferences: label true; chatter, status lines, questions, plans, advice, tool noise:
label false), dealt into sessions of alternating user / assistant / tool events. Two
splits written apart: ``dev`` (the scorer was tuned on it) and ``held_out`` (written
before tuning, never tuned on). Run: python tests/capture/make_capture_set.py
"""

import json
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

DEV_POSITIVE = {
    "decision": [
        "We decided to use SQLite in WAL mode for the local store because it handles concurrent readers well.",
        "Let's go with pydantic v2 strict models for the request bodies, since coercion hid bugs before.",
        "Decision: the export format stays JSON Lines so a file can be streamed line by line.",
        "We'll use uuid4 hex strings as memory ids going forward.",
        "I chose httpx over requests because we need HTTP/2 for the proxy.",
        "We agreed to keep the retention limit per project rather than per tenant.",
        "Let's drop Python 3.9 support; the codebase uses match statements now.",
        "We settled on ruff for linting instead of flake8 because it is much faster.",
        "From now on every migration gets its own numbered script in MIGRATIONS.",
        "We're going to switch the CI runner to ubuntu-24.04 because 22.04 lacks the sqlite version we need.",
        "I opted for a keyset cursor on (created_at, id) instead of offsets because offsets skip rows under writes.",
        "Let's keep the hashing embedder as the offline default.",
        "We decided the console will be served from the same process as the API.",
        "Going with Atlas Vector Search for the hosted shortlist since we already run on Atlas.",
        "We will stick with argparse for the CLI; click adds startup time.",
        "Let's use Decimal for the billing amounts because floats rounded the invoices wrong.",
        "I decided to store embeddings as float32 BLOBs, not JSON lists, to save space.",
        "We agreed that the tenant always comes from the signed identity, never the request body.",
    ],
    "fix": [
        "Fixed it by closing the cursor before committing; the database lock is gone.",
        "The fix was to pin numpy below 2.0 in pyproject.toml.",
        "That worked: setting PRAGMA busy_timeout to 5000 stopped the 'database is locked' errors.",
        "Tests pass now after I moved the fixture into conftest.py.",
        "Solved the flaky test by freezing the clock with the injected Clock instead of sleeping.",
        "The workaround is to set AWS_REGION explicitly when running cdk synth in CI.",
        "Resolved the import cycle by moving Settings into capsule/config.py.",
        "The build is green now that the Node version is pinned to 20 in .ci/run.",
        "Fixed by adding the missing index on (tenant, project, version); the query dropped from 2 s to 4 ms.",
        "Setting MALLOC_ARENA_MAX=2 fixed the memory growth in the worker processes.",
        "The fix is to decode the body as UTF-8 with surrogatepass before parsing.",
        "Wrapping the write in BEGIN IMMEDIATE fixed the lost updates under concurrent inserts.",
        "Upgrading mongomock to 4.1 fixed the aggregation test failures.",
        "That did it: the 415 came from a missing content-type header in the client.",
        "Fixed the timezone bug by storing every time as UTC epoch seconds.",
        "Passing check=True to subprocess.run fixed the silent failures in the hook.",
    ],
    "error": [
        "The root cause was a stale .pyc file from the old package layout.",
        "The problem was that the token file had mode 0644, so the server refused to start.",
        "It turned out the embedder returned float64 vectors and the BLOB size check failed.",
        "The 500 was caused by a None meta reaching json.dumps in the audit writer.",
        "The test failed because the clock fixture was not timezone-aware.",
        "The crash was due to a recursion limit in the pydantic schema for nested meta values.",
        "The issue was the gateway reading Content-Length before the body was fully received.",
        "KeyError 'tenant' happens because the authorizer context is empty for local requests.",
        "The deploy failed because the Lambda layer zip was over 250 MB unzipped.",
        "The bug was an off-by-one in the chunk overlap, which duplicated the last sentence.",
        "The timeout happens because the Voyage client retries five times with no deadline.",
        "The failure turned out to be a missing libgomp on the slim image, needed by onnxruntime.",
        "The segfault is caused by sharing one sqlite3 connection across threads.",
        "The migration failed since SQLite cannot drop a column that has an index on it.",
    ],
    "dead_end": [
        "Raising the pool size didn't help; the lock errors are still there.",
        "I tried upgrading sqlite3 through pysqlite3-binary but it does not work on arm64.",
        "Switching to orjson did not fix the encoding error, so that is ruled out.",
        "Tried running the tests with -p no:randomly but the flakiness stays, so ordering is not the cause.",
        "Adding retries to the HTTP client doesn't work here because the 403 is permanent.",
        "I tried caching the schema at import time but it broke the lazy imports in cli.py.",
        "Downgrading pytest to 7.4 won't help; the warning comes from pydantic.",
        "Increasing the Lambda memory to 3 GB did not fix the cold start; it is the import time.",
        "Tried mocking the store but the contract tests then pass against nothing, so don't bother.",
        "Setting the locale to C.UTF-8 didn't fix the tokenizer difference between Mac and Linux.",
    ],
    "convention": [
        "Always run the contract tests against both SQLite and mongomock before merging.",
        "Never commit the .capsule token file; it is in .gitignore for a reason.",
        "Make sure to bump the schema version in MIGRATIONS whenever a column is added.",
        "Our convention is one handler module per route under functions/handlers/.",
        "Always pass the clock into the service; tests must not patch time.",
        "Handlers must not contain logic; they call one service method and return.",
        "Never import functions/ from the library in layers/capsule.",
        "Make sure you use bound parameters in every SQL query, no f-strings with values.",
    ],
    "preference": [
        "I prefer short commit messages that say why, not what.",
        "Please don't use print for logging in the library; use the capsule logger.",
        "I'd rather have one small module per job than one big utils.py.",
        "I really dislike tests that sleep; use the injected clock.",
        "My favourite way to debug these is with sqlite3 .dump on a copy of the file.",
        "I prefer tabs of two spaces in the YAML files for the CI.",
        "Please always show me the diff before you commit.",
    ],
}

DEV_NEGATIVE = [
    "ok",
    "Thanks!",
    "Sounds good.",
    "Great, thanks.",
    "Sure.",
    "Let me look at the failing test.",
    "Let me check the logs.",
    "I'll run the test suite now.",
    "Running pytest on tests/unit.",
    "Now let me open service.py.",
    "Can you run the tests again?",
    "What does this function return?",
    "How do I start the local server?",
    "Could you check why the build is slow?",
    "Is the CI green?",
    "Looking at the stack trace now.",
    "I'll take a look at the migration.",
    "Let's see what the export gives.",
    "Here are a few options you could consider for the cache.",
    "You could also try a smaller batch size.",
    "I'm thinking about refactoring the ranking module at some point.",
    "I want to make the search faster.",
    "Reading the README first.",
    "Checking the route table.",
    "Perfect.",
    "Yes, go ahead.",
    "Nope.",
    "Hmm, interesting.",
    "Next, I'll update the docstring.",
    "Good catch.",
    "Please continue.",
    "Can you explain what changes_since does?",
    "Where is the route table defined?",
    "The file has 300 lines.",
    "Here's the updated function.",
    "I hope this helps!",
    "Let me know if you want me to add more tests.",
    "Should I also update the docs?",
    "I'll start with the store layer.",
    "Searching for usages of export_page.",
    "All 42 tests passed.",
    "Done.",
    "Got it.",
    "lgtm",
    "Opening tests/api/conftest.py.",
    "Which branch are you on?",
    "Feel free to ask if anything is unclear.",
    "I made the change you asked for.",
    "Wow, that was quick.",
    "Let me try again with verbose output.",
    "Here is the output of git status.",
    "Alright, on to the next one.",
    "We could look into caching later.",
    "Would it make sense to add an index here?",
    "Do you want me to commit this?",
    "I'm wondering whether we need the second query at all.",
    "It's a good idea to write the test first.",
    "The function is called from three places.",
]

DEV_TOOL_NOISE = [
    "$ pytest -q\n........................ [100%]\n24 passed in 1.32s",
    "$ git status\nOn branch main\nnothing to commit, working tree clean",
    "$ ls layers/capsule\n__init__.py models.py service.py store",
    "$ pip install -e .\nSuccessfully installed capsule-memory-0.1.0",
    "$ git diff --stat\n 2 files changed, 14 insertions(+), 3 deletions(-)",
    "$ wc -l service.py\n472 service.py",
]

HELD_POSITIVE = {
    "decision": [
        "We went with Redis streams for the job queue, because SQS added too much latency locally.",
        "Let's use the MIT licence for the client library.",
        "Decided: feature flags live in the settings table, not in environment variables.",
        "We're going to go with server-side sessions since the tokens got too large for cookies.",
        "I settled on black's default line length of 88 for the new package.",
        "We agreed to version the public API under /v2 instead of adding headers.",
        "Let's stick with the monorepo; splitting the CLI out costs more than it saves.",
        "We decided to batch embeddings by 64 texts, which keeps each call under the provider limit.",
        "From now on the staging database is refreshed every Monday from a masked snapshot.",
        "We'll keep the old endpoint alive for one release so existing clients can migrate.",
    ],
    "fix": [
        "That fixed it: clearing the npm cache removed the corrupted tarball.",
        "The fix was adding `await` before the close() call in the shutdown handler.",
        "Fixed the 401s by refreshing the credentials 5 minutes before they expire.",
        "The login test passes now after resetting the rate limiter between tests.",
        "Resolved the merge conflict in models.py by keeping both new fields.",
        "Setting the Content-Type to application/json fixed the 415 from the gateway.",
        "Fixed by raising the ulimit to 4096 on the build agent; the too-many-open-files error is gone.",
        "Works now: the Dockerfile needed libpq-dev for psycopg to build.",
    ],
    "error": [
        "The root cause is a race between the scheduler and the purge job on the same rows.",
        "It turned out the CSV had a BOM, so the first column name never matched.",
        "The memory leak was caused by the query cache holding every result forever.",
        "The 502s happen because the load balancer idle timeout is shorter than our keep-alive.",
        "The problem was a trailing slash in the base URL, which broke the signature.",
        "The job failed due to a missing IAM permission for secretsmanager:GetSecretValue.",
        "The wrong totals were because of integer division in the average.",
    ],
    "dead_end": [
        "Tried bumping the timeout to 60 s but the request still hangs, so it is not a timeout.",
        "Using a thread pool for the embeddings did not help; the model holds the GIL.",
        "Reinstalling the venv doesn't fix it either.",
        "I tried the async driver, but it won't work with the mongomock tests.",
        "Disabling the cache didn't change the latency, so the cache is ruled out.",
    ],
    "convention": [
        "Always squash the fixup commits before asking for review.",
        "Never log request bodies; they may contain secrets.",
        "Make sure to run the schemathesis job when a route changes.",
        "Our rule of thumb is one assertion topic per test.",
    ],
    "preference": [
        "I prefer pytest parametrize over loops inside a test.",
        "Please never force-push to the shared branches.",
        "I'd rather see a failing test first, then the fix.",
        "I really like the explanation strings on every result; keep them.",
    ],
}

HELD_NEGATIVE = [
    "okay",
    "thank you",
    "Nice.",
    "Cool, that works for me.",
    "Let me grep for that name.",
    "I'll check the CI logs.",
    "Running the linter.",
    "Now running the migration on a copy.",
    "Can you show me the failing assertion?",
    "Why is this import here?",
    "What is the default limit?",
    "Could you summarise the diff?",
    "Let's see how long the build takes.",
    "Looking into it.",
    "You might want to add a docstring there.",
    "Here are the three places it is used.",
    "I'm planning to clean up the fixtures next week.",
    "I need to leave in ten minutes.",
    "Reading the traceback.",
    "Yes.",
    "No, leave it.",
    "Hmm.",
    "Okay, next file.",
    "Good.",
    "Do we have a test for this?",
    "Is this the latest version?",
    "Which Python does CI use?",
    "I'll add the test now.",
    "Opening the settings module.",
    "That's a lot of output.",
    "Here's what I changed.",
    "Hope that makes sense.",
    "Let me know when you're back.",
    "Shall I push the branch?",
    "I'm looking for the place where tokens are hashed.",
    "Maybe we should rename this later.",
    "All checks passed.",
    "Let me rerun it once more.",
]

HELD_TOOL_NOISE = [
    "$ npm test\n> 18 passing (2s)",
    "$ git log --oneline | head -2\n4764d87 Fuzz test\n3b2af79 Review",
    "$ cat .python-version\n3.11",
    "$ docker ps\nCONTAINER ID   IMAGE   STATUS",
]


# Harder, realistic events: several sentences, status mixed with what matters, cue words in
# chatter ("did that fix it?") and memories without the usual words. Written in two halves
# the same way; only DEV_HARD was looked at while tuning.
DEV_HARD = [
    (
        "assistant",
        "Let me check the logs first. OK, found it: the worker crashed because the queue URL was read "
        "before the env file loaded, so I moved load_dotenv() to the top of main.py.",
        True,
    ),
    (
        "assistant",
        "I ran the suite again and everything is green. The change was small: the fixture now closes the "
        "connection in a finally block, which is why the 'database is locked' errors stopped.",
        True,
    ),
    ("user", "did that fix it?", False),
    ("assistant", "Let's see if this fixes it.", False),
    ("assistant", "I'll fix the typo in the README next.", False),
    ("user", "The problem is I don't know yet where it comes from.", False),
    ("assistant", "Running the migration now. It may take a minute.", False),
    ("user", "ok so we go with Postgres then, SQLite can't do the row locking we need for the job table", True),
    (
        "assistant",
        "Summary so far: the flaky upload test depended on wall-clock time; it now uses the injected "
        "clock. The S3 mock also needed a region or boto3 refused to build the client.",
        True,
    ),
    (
        "assistant",
        "Here is what I changed:\n- moved the retry into the client\n- added a test\n- updated the docs",
        False,
    ),
    ("user", "remember that the staging box only has 2 GB of RAM, don't run the full benchmark there", True),
    ("assistant", "Interesting, the numbers look better than yesterday.", False),
    ("user", "can we try using a bigger batch size?", False),
    (
        "assistant",
        "Tried a batch size of 512: memory went up to 3 GB and throughput did not change, so 64 stays.",
        True,
    ),
    ("assistant", "I couldn't reproduce the timeout locally; I'll add more logging and we'll see in CI.", False),
    ("user", "nah, leave the old endpoint, mobile clients still call it until the June release", True),
    ("assistant", "Good question. I think the cache is the cause but I'm not sure yet.", False),
    ("assistant", "I looked at three options for the search index and will compare them tomorrow.", False),
    (
        "assistant",
        "Note for later: `make lint` needs ruff 0.6 or newer, older versions do not know the C90 rule.",
        True,
    ),
    ("user", "I use vim, so please keep the files under 100 columns", True),
    ("assistant", "Opening the config now to see what the default timeout is.", False),
    ("assistant", "The error message is: ConnectionResetError: [Errno 104] Connection reset by peer.", False),
    ("user", "This is taking forever.", False),
    (
        "assistant",
        "The upgrade to Django 5 is done; the only breaking change for us was that the "
        "USE_L10N setting is gone, so I removed it from settings.py.",
        True,
    ),
    ("user", "what did we decide about the logging format last week?", False),
    (
        "assistant",
        "The deploy script now tags the image with the git SHA instead of 'latest', because rollbacks "
        "pulled the wrong image twice.",
        True,
    ),
    (
        "tool",
        "Traceback (most recent call last):\n  File \"app.py\", line 3, in <module>\nImportError: cannot import name 'x'",
        False,
    ),
    ("assistant", "I'm going to refactor this module a bit to make it easier to test.", False),
    ("user", "yes that's right, the API keys rotate every 90 days, the cron job handles it", True),
    ("assistant", "Sure, I can do that. Which file should I start with?", False),
]

HELD_HARD = [
    (
        "assistant",
        "Checked the dashboard. The latency spike lines up with the nightly backup, which saturates the "
        "disk; I moved the backup to 03:00 when traffic is lowest.",
        True,
    ),
    ("assistant", "Let me try one more thing.", False),
    ("user", "is it fixed now?", False),
    ("assistant", "I'll look into why the test fails on Windows.", False),
    ("user", "we're not using GraphQL for this, the team agreed REST is enough for the admin API", True),
    ("assistant", "The build finished in 4 minutes.", False),
    (
        "assistant",
        "Found the leak: every request created a new HTTP session and never closed it. Reusing one "
        "session per worker keeps memory flat now.",
        True,
    ),
    ("user", "please stop adding type: ignore comments, fix the types instead", True),
    ("assistant", "Here are the results of the benchmark:\n- p50 12 ms\n- p95 40 ms\n- p99 90 ms", False),
    ("assistant", "Switching the JSON library to orjson gave nothing measurable, so I reverted it.", True),
    ("user", "hmm not sure, what do you think?", False),
    ("assistant", "I'm reading through the auth middleware to understand the flow.", False),
    (
        "assistant",
        "For the record: the payment provider's sandbox rejects amounts under 50 cents, which is why "
        "the small-order tests failed.",
        True,
    ),
    ("user", "the prod database is in eu-west-1, never point the scripts at us-east-1", True),
    ("assistant", "That's a good idea, I will keep it in mind.", False),
    ("assistant", "The linter shows 14 warnings, mostly unused imports.", False),
    (
        "assistant",
        "I removed the retry loop: the service returns 409 on duplicates, and retrying only made "
        "the duplicate check slower.",
        True,
    ),
    ("user", "I'm on a Mac with an M2 chip, so x86-only wheels won't install here", True),
    ("assistant", "Let me know once you have pushed the branch.", False),
    (
        "assistant",
        "The cron expression was wrong: it ran at minute 0 of every hour instead of once a day at 0:00. "
        "Changed it to '0 0 * * *'.",
        True,
    ),
    ("user", "what's the status?", False),
    ("assistant", "I'll write the migration after lunch.", False),
    ("tool", '$ curl -s localhost:8080/health\n{"status": "ok"}', False),
    (
        "assistant",
        "The docs say the limit is 100 requests per minute per key; I couldn't find anything about bursts yet.",
        False,
    ),
    ("user", "let's keep the feature flag off in production until the load test passes", True),
]


def _hard(split: str, items: list, rng: random.Random) -> list[dict]:
    events, start = [], datetime(2026, 4, 6, 9, 0, tzinfo=UTC)
    for number, (role, text, label) in enumerate(items):
        events.append(
            {
                "split": split,
                "session": f"{split}-hard-{number // 8}",
                "role": role,
                "text": text,
                "time": (start + timedelta(minutes=number)).isoformat(),
                "label": label,
                "kind": "hard",
            }
        )
    return events


def _events(split: str, positive: dict, negative: list[str], noise: list[str], rng: random.Random) -> list[dict]:
    items = [(text, True, kind) for kind, texts in positive.items() for text in texts]
    items += [(text, False, "chatter") for text in negative]
    rng.shuffle(items)
    noise = list(noise)
    events, session, start = [], 0, datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
    for number, (text, label, kind) in enumerate(items):
        if number % 9 == 0:
            session += 1
        role = "user" if kind in ("preference", "convention") or (not label and number % 2) else "assistant"
        at = start + timedelta(hours=session * 5, minutes=number)
        events.append(
            {
                "split": split,
                "session": f"{split}-{session}",
                "role": role,
                "text": text,
                "time": at.isoformat(),
                "label": label,
                "kind": kind,
            }
        )
        if number % 7 == 3 and noise:
            events.append(
                {
                    "split": split,
                    "session": f"{split}-{session}",
                    "role": "tool",
                    "text": noise.pop(0),
                    "time": at.isoformat(),
                    "label": False,
                    "kind": "tool",
                }
            )
    return events


def main() -> None:
    rng = random.Random(18)
    events = _events("dev", DEV_POSITIVE, DEV_NEGATIVE, DEV_TOOL_NOISE, rng)
    events += _events("held_out", HELD_POSITIVE, HELD_NEGATIVE, HELD_TOOL_NOISE, rng)
    events += _hard("dev", DEV_HARD, rng) + _hard("held_out", HELD_HARD, rng)
    out = Path(__file__).with_name("coding_sessions.json")
    out.write_text(json.dumps({"format": "capsule-capture-eval", "version": 1, "events": events}, indent=1) + "\n")
    print(f"{len(events)} events -> {out}")


if __name__ == "__main__":
    main()
