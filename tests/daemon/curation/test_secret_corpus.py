"""Secret redaction measured on the labelled corpus of tests/data/secrets (bench/
secret_detection.py prints the figures per kind): the notes with secrets lose them, the
look-alikes come back unchanged, and the committed files are what the generator writes.
The held-out files are only measured there, never asserted on here."""
import importlib.util
import json
from collections import Counter

import pytest

from memnest_daemon.curation.privacy import clean
from support import DATA as TEST_DATA, ROOT

DATA = TEST_DATA / "secrets"
WINDOW = 12  # as in the bench: a secret leaks when this many of its characters survive

# The shapes issue 36 asks for, and the look-alikes that must pass.
POSITIVE_KINDS = {"aws-access-key", "aws-secret-key", "anthropic-key", "openai-key",
                  "github-token", "gitlab-token", "slack-token", "stripe-key",
                  "google-service-account", "google-api-key", "jwt", "private-key",
                  "connection-string", "env-assignment"}
LOOKALIKE_KINDS = {"git-sha", "uuid", "base64-image", "integrity-hash", "docker-digest",
                   "placeholder", "content-hash", "version", "colour", "prose", "code", "url"}


def _load(name: str) -> list[dict]:
    return [json.loads(line) for line in (DATA / f"{name}.jsonl").read_text().splitlines()
            if line.strip()]


POSITIVES, LOOKALIKES = _load("positives"), _load("lookalikes")


def _leaks(secret: str, text: str) -> bool:
    width = min(len(secret), WINDOW)
    return any(secret[i:i + width] in text for i in range(len(secret) - width + 1))


def _leaked(note: dict) -> bool:
    text = clean(note["text"]).text
    return any(_leaks(secret, text) for secret in note["secrets"])


def test_the_corpus_is_large_and_covers_the_shapes():
    assert len(POSITIVES) >= 200 and len(LOOKALIKES) >= 200
    assert POSITIVE_KINDS <= {n["kind"] for n in POSITIVES}
    assert LOOKALIKE_KINDS <= {n["kind"] for n in LOOKALIKES}
    assert all(n["secrets"] and all(s in n["text"] for s in n["secrets"]) for n in POSITIVES)


def test_secrets_are_redacted():
    leaked = [n for n in POSITIVES if _leaked(n)]
    assert len(leaked) <= 0.02 * len(POSITIVES), [n["text"][:120] for n in leaked]
    # and no kind far below the rest
    total, missed = Counter(n["kind"] for n in POSITIVES), Counter(n["kind"] for n in leaked)
    assert all(missed[kind] <= 0.1 * n for kind, n in total.items()), missed


def test_lookalikes_pass_unchanged():
    changed = [n["text"] for n in LOOKALIKES if clean(n["text"]).text != n["text"]]
    assert len(changed) <= 0.01 * len(LOOKALIKES), changed


@pytest.mark.parametrize("name", ["positives", "lookalikes", "positives_heldout",
                                  "lookalikes_heldout"])
def test_cleaning_the_corpus_is_idempotent(name):
    for note in _load(name):
        once = clean(note["text"]).text
        again = clean(once)
        assert again.text == once and again.removed == (), note["text"][:120]


def test_the_committed_corpus_is_what_the_generator_writes():
    spec = importlib.util.spec_from_file_location(
        "make_secret_corpus", ROOT / "bench" / "make_secret_corpus.py")
    assert spec is not None and spec.loader is not None
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    for name, rows in generator.corpus().items():
        assert rows == _load(name), name
