"""Private text and secrets never reach the store: curation/privacy.py on its own (what it
removes, what it must leave alone, hostile input), then every write path of the real daemon
(memory_store, memory_update, memory_import, raw memory_query writes), read back from the
database and after a restart."""
import base64
import json
import random

import pytest

from memnest_daemon.curation import privacy
from memnest_daemon.curation.privacy import NOTHING_LEFT, PRIVATE, clean
from memnest_shims.client import ToolFailure
from work import Work

GITHUB = "ghp_" + "Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0Uv1Wx2"
STRIPE = "sk_live_4eC39HqLyjWDarjtT1zdp7dc"
AWS = "AKIAIOSFODNN7EXAMPLE"
JWT = ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwi"
       "aWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c")
ANTHROPIC = "sk-ant-api03-" + "Qx7_vB2-mK9pL4wR8tY1zN6cH3jD5fG0sA" * 2 + "kE4uI7oP2qW9eR5tY8uIAA"
OPENAI_PROJECT = "sk-proj-" + "Zb3Kq9Lm2Xv7Rt5Wn1Yc8Hd4Fg6Js0Pa" * 2 + "T3BlbkFJ" + "Mn4Bv7Cx2Zl9Kj5Hg1" * 2
AWS_SECRET = "x8Kp2Lq9Vm4Rt7Wn1Yc5Hd3Fg6Js0PaBzQe/+Tu3"


# -- <private> sections ----------------------------------------------------------------------

@pytest.mark.parametrize("text, kept, sections", [
    ("Deploys go through <private>the side door on 4th street</private> the CI runner",
     "Deploys go through the CI runner", 1),
    ("a <PRIVATE>x</Private> b <private >y</ private> c", "a b c", 2),
    ("start\n<private>line one\nline two</private>\nend", "start\n\nend", 1),
    ("kept <private>hidden and never closed\nmore hidden", "kept ", 1),
    ("a <private>one <private>two</private> still hidden</private> b", "a b", 1),
    ("stray </private> close tag is dropped", "stray close tag is dropped", 0),
    ('a <private reason="hr">salary 120k</private> b', "a b", 1),
    ("<private>a</private><private>b</private>tail", "tail", 2),
    ("a <privateer> is not a tag", "a <privateer> is not a tag", 0),
])
def test_private_sections_are_left_out(text, kept, sections):
    cleaned = clean(text)
    assert cleaned.text == kept
    assert cleaned.private_sections == sections


def test_a_tag_joined_by_a_removal_is_removed_too():
    cleaned = clean("a <pri<private>x</private>vate>secret stuff")
    assert "secret stuff" not in cleaned.text and "private" not in cleaned.text.lower()
    assert _unchanged(cleaned.text)


def _unchanged(text: str) -> bool:
    again = clean(text)
    return again.text == text and again.removed == ()


def test_nothing_left_when_all_is_private():
    assert clean("<private>all of it</private>").text.strip() == ""
    assert clean("  <private>unclosed").text.strip() == ""


# -- secrets ---------------------------------------------------------------------------------

@pytest.mark.parametrize("text, secret, kind", [
    ("password = hunter2", "hunter2", "password"),
    ("Password: Hunter2 works on staging", "Hunter2", "password"),
    ('{"api_key": "sk-proj-abc123XYZ", "user": "bob"}', "sk-proj-abc123XYZ", "api-key"),
    ("api_key: 9f8e7d6c5b4a39281706f5e4d3c2b1a0", "9f8e7d6c5b4a39281706f5e4d3c2b1a0", "api-key"),
    ('secret_key := "q8Zr!x2Lm"', "q8Zr!x2Lm", "secret"),
    (f"AWS key {AWS} for the CI user", AWS, "aws-access-key"),
    ('aws_secret_access_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"',
     "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "aws-access-key"),
    (f"token {GITHUB} for the bot", GITHUB, "github-token"),
    ("glpat-xxxxxxxxxxxxxxxxxxxx1234 for gitlab", "glpat-xxxxxxxxxxxxxxxxxxxx1234",
     "gitlab-token"),
    ("slack xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
     "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", "slack-token"),
    ("hook https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
     "hooks.slack.com/services/T00000000", "slack-token"),
    (f"stripe {STRIPE}", STRIPE, "stripe-access-key"),
    (f"Authorization: Bearer {JWT}", JWT.split(".")[2], "jwt"),
    ("//registry.npmjs.org/:_authToken=npm_abcdefghijklmnopqrstuvwxyz0123456789",
     "npm_abcdefghijklmnopqrstuvwxyz0123456789", "npm-token"),
    ("openai sk-abcdefghijklmnopqrstT3BlbkFJabcdefghijklmnopqrst", "T3BlbkFJ", "openai-token"),
    ("SG.abcdefghijklmnopqrstuv.abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQ for mail",
     "SG.abcdefghijklmnopqrstuv", "sendgrid-api-key"),
    ("telegram 123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0", "AAHdqTcvCH1vGWJxfSeofSAs0K5",
     "telegram-bot-token"),
    # what the plugins miss (bench/secret_detection.py measures them)
    (f"The Claude key is {ANTHROPIC} for the eval", ANTHROPIC, "anthropic-key"),
    ("admin key sk-ant-admin01-" + "Hy6_Tr3-Ew8Qa1Zs4Xd7Cf2Vg5Bn9Mj0Lk" * 3 + "AA",
     "Hy6_Tr3-Ew8Qa1Zs4Xd7Cf2Vg5Bn9Mj0Lk", "anthropic-key"),
    (f"OPENAI_API_KEY={OPENAI_PROJECT}", OPENAI_PROJECT, "openai-token"),
    ("renovate uses github_pat_11ABCDEFG0123456789XYZ_" + "aB3cD4eF5gH6iJ7kL8mN9oP0" * 2
     + "qR1sT2uV3wX", "aB3cD4eF5gH6iJ7kL8mN9oP0", "github-token"),
    ("maps key AIzaSyB4x9Lm2Kq7Vt5Wn1Yc8Hd3Fg6Js0PaZeR, referrer-restricted",
     "AIzaSyB4x9Lm2Kq7Vt5Wn1Yc8Hd3Fg6Js0PaZeR", "google-api-key"),
    ("sk_live_51" + "Hx7Kq2Lm9Vt4Wn1Yc8Rd3Fg6Js0PaZe" * 3, "Js0PaZeHx7Kq2Lm9", "stripe-access-key"),
    ("test mode sk_test_4eC39HqLyjWDarjtT1zdp7dc", "sk_test_4eC39HqLyjWDarjtT1zdp7dc",
     "stripe-access-key"),
    ("export NPM_TOKEN=npm_abcdefghijklmnopqrstuvwxyz0123456789",
     "npm_abcdefghijklmnopqrstuvwxyz0123456789", "npm-token"),
    (f"Use key AKIA2E7I54447IRBLAKS with secret {AWS_SECRET} for backups", AWS_SECRET,
     "aws-secret-key"),
    (f"AWS pair: AKIA2E7I54447IRBLAKS / {AWS_SECRET}", AWS_SECRET, "aws-secret-key"),
    ("curl -H 'Authorization: Bearer Tk9x2Lm7Qp4Vr8Ws1Yz6Hc3' https://api.acme.io",
     "Tk9x2Lm7Qp4Vr8Ws1Yz6Hc3", "bearer-token"),
    ("cache at redis://:nXW8h3NIgO5c@10.0.3.14:6379/0", "nXW8h3NIgO5c", "url-password"),
    ("mysql://grafana:8zNw92I6xf+y4Uy1Of@db:3306/metrics", "8zNw92I6xf+y4Uy1Of",
     "url-password"),
    ("Server=tcp:sql,1433;User ID=sa;Password=^rs4eRClB!d#1es;Encrypt=True;", "^rs4eRClB!d#1es",
     "password"),
    ("API_TOKEN=wEopseUY8WxY1J6SQeRoUi2Xx", "wEopseUY8WxY1J6SQeRoUi2Xx", "token"),
    ("SMTP_PASS=i73NmJx0Mr1Ya1", "i73NmJx0Mr1Ya1", "password"),
    ("Heroku config: ENCRYPTION_KEY=87aa76ecc04fb86548b7368a87f3c21c",
     "87aa76ecc04fb86548b7368a87f3c21c", "secret-key"),
    ('"SessionToken": "IQoJb3JpZ2luX2VjEXAMPLEa1b2c3d4e5f6g7h8"',
     "IQoJb3JpZ2luX2VjEXAMPLEa1b2c3d4e5f6g7h8", "token"),
    ("SECRET_KEY=django-insecure-ewl+fko&&ud581=9y2-5bm1&^b-a7pv()m9xl%prq9#1m5fz4@",
     "5bm1&^b-a7pv()m9xl%prq9#1m5fz4@", "secret-key"),
    ("setx OPENWEATHER_API_KEY 763e52ab14575bb9b40376cde1125655",
     "763e52ab14575bb9b40376cde1125655", "api-key"),
    ("Encrypted key, passphrase orbit-harbor9246!: see the vault", "orbit-harbor9246!",
     "password"),
    ("redis.conf: requirepass riverFalcon5124#", "riverFalcon5124#", "password"),
    ("spring.datasource.password=quartz.Falcon4122", "quartz.Falcon4122", "password"),
])
def test_secrets_are_redacted(text, secret, kind):
    cleaned = clean(text)
    assert secret not in cleaned.text
    assert f"[REDACTED:{kind}]" in cleaned.text
    assert kind in cleaned.removed and PRIVATE not in cleaned.removed
    assert _unchanged(cleaned.text)  # a cleaned text is clean


@pytest.mark.parametrize("url, redacted", [
    ("postgres://app:S3cr3tPw@db.internal:5432/app",
     "postgres://app:[REDACTED:url-password]@db.internal:5432/app"),
    ("clone https://deploy:hunter2@git.example.com/repo.git now",
     "clone https://deploy:[REDACTED:url-password]@git.example.com/repo.git now"),
])
def test_only_the_password_of_a_url_is_redacted(url, redacted):
    assert clean(url).text == redacted


@pytest.mark.parametrize("text", [
    "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nAAAA\n"
    "-----END OPENSSH PRIVATE KEY-----",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA1234\n-----END RSA PRIVATE KEY-----",
    "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n(the rest was cut off)",
    "PuTTY-User-Key-File-2: ssh-rsa\nEncryption: none\nPrivate-Lines: 1\nAAAAgQDx\n"
    "Private-MAC: 8f3a9c",
    "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIFHjBAqFYfEoOfTqXaqmzhegqA2\n"
    "-----END ENCRYPTED PRIVATE KEY-----",
    "-----BEGIN RSA PRIVATE KEY----- MIIEowIBAAKCAQEA1234 Zm9vYmFy -----END RSA PRIVATE KEY-----",
    "---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----\nP2/56wAAAi4AAAA3aWYtbW9kbntzaWdu\n"
    "---- END SSH2 ENCRYPTED PRIVATE KEY ----",
])
def test_a_private_key_is_redacted_whole(text):
    cleaned = clean("the deploy key:\n" + text + "\nend of note")
    body = text.split("\n")[1] if "\n" in text else text.split(" ")[4]
    assert body not in cleaned.text and "[REDACTED:private-key]" in cleaned.text
    assert cleaned.text.startswith("the deploy key:\n")
    closed = "END " in text or "MAC" in text  # else the rest of the text goes too
    assert cleaned.text.endswith("end of note") == closed


# Ordinary engineering notes: commit ids, hashes, UUIDs, base64 of plain text, paths,
# versions, names of secrets and of the variables that hold them.
ORDINARY = [
    "The commit 3f9a2c1d4e5b6a7c8d9e0f1a2b3c4d5e6f7a8b9c fixed the flaky reload test",
    "Fixed in 3f9a2c1 (short sha), see PR #4521; merged as 44b86e7",
    "content_hash is sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "MD5 d41d8cd98f00b204e9800998ecf8427e and sha1 da39a3ee5e6b4b0d3255bfef95601890afd80709",
    "Docker image sha256:9b2a4c5d8e7f6a1b0c3d2e5f4a7b6c9d8e1f0a3b2c5d4e7f6a9b8c1d0e3f2a5b",
    "Request id 123e4567-e89b-12d3-a456-426614174000 timed out after 30s",
    "UUIDv4 f47ac10b-58cc-4372-a567-0e02b2c3d479 and ULID 01ARZ3NDEKTSV4RRFFQ69G5FAV",
    "The fixture is aGVsbG8gd29ybGQsIHRoaXMgaXMgbm90IGEgc2VjcmV0IGF0IGFsbA== (hello world)",
    "Base64 of the config eyJuYW1lIjogIm1lbW5lc3QifQ== decodes to {\"name\": \"memnest\"}",
    "Config lives in /etc/memnest/config.toml and ~/.config/memnest/settings.json",
    "Windows keeps it in C:\\Users\\dev\\AppData\\Local\\memnest\\db",
    "Upgrade numpy 1.26.4 -> 2.1.0; python 3.11.9; node v20.11.1; ladybug==0.22.0",
    "Password: must be at least 12 characters and rotated every 90 days",
    "The password policy is enforced by the auth service",
    "api_key rotation happens monthly; the secret manager is Vault",
    "Set api_key = settings.OPENAI_API_KEY in the client factory",
    "password = os.environ['DB_PASSWORD'] in settings.py",
    "secret = get_secret('db')",
    "The DB_PASSWORD env var must be set before running migrations",
    "PASSWORD=DB_PASSWORD_VAR is read by the entrypoint",
    "password=${DB_PASS} in the compose file, password: <your password> in the docs",
    "password: null, api_key: None, secret: false",
    "if password == user_input: return True",
    "pwd: /srv/app, then run make install",
    "ssh git@github.com:memnest/memnest.git and http://localhost:8080/health",
    "Servers 52.14.200.11 and 10.0.0.5:5432",
    "GitHub tokens look like ghp_ followed by 36 characters; Stripe's start with sk_live_",
    "the file starts with BEGIN RSA PRIVATE KEY when it is a key",
    "A memory with markup <script>alert(1)</script> & \u2028 odd text",
    "Timestamps like 1700000000 and 2024-05-01T12:00:00Z",
    "APACHE_HOME, APEXRANKING and APDUResponse are names",
    "nonce: 4f1c8e2a9b7d6c5e, salt: 9a8b7c6d; secrets: 3 rotated, 2 pending",
    "Long hex 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef is an id",
    # placeholders
    "Example: aws_access_key_id = AKIAXXXXXXXXXXXXXXXX, never a real one",
    "The README's sample key is sk-ant-api03-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    "Use ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx in the docs; STRIPE_KEY=sk_test_000000000000000000",
    'The config sample says api_key: "YOUR_API_KEY" and OPENAI_API_KEY="your-openai-key"',
    "Fill in ANTHROPIC_API_KEY=sk-ant-api03-... in .env",
    "postgres://user:password@host:5432/db and mongodb+srv://<user>:<password>@cluster/",
    "DATABASE_URL=postgres://app:${DB_PASSWORD}@db:5432/app",
    "REDIS_PASSWORD= (empty: the dev redis has no auth)",
    "Authorization: Bearer <token>, or Bearer ${ACCESS_TOKEN}, or Bearer {token}",
    # names, not values
    "arn:aws:secretsmanager:us-west-2:150466212400:secret:prod/db-AbCdEf",
    "private_key = load_pem_private_key(data, password=None)",
    "let secret = std::env::var(\"WEBHOOK_SECRET\")?;",
    "max_tokens: 4096, next_token: eyJvZmZzZXQiOjEwMH0, CACHE_KEY=user:42:profile",
    "SORT_KEY=created_at and PARTITION_KEY=tenant_id; monkey: banana7; bypass: true",
    "token = next(tokens); export GITHUB_TOKEN=$(gh auth token)",
    "The password is required; the password is stored in Vault; password reset links expire",
    # a forty-character base64 run that is no AWS key: a commit id, and mixed case far from aws
    "commit 3f9a2c1d4e5b6a7c8d9e0f1a2b3c4d5e6f7a8b9c fixed the aws uploader",
    "fixture Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZmdo",
]


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_notes_pass_unchanged(text):
    cleaned = clean(text)
    assert cleaned.text == text and cleaned.removed == ()


def test_a_long_base64_blob_passes_unchanged():
    rng = random.Random(7)
    blob = base64.b64encode(rng.randbytes(6000)).decode()
    wrapped = "\n".join(blob[i:i + 76] for i in range(0, len(blob), 76))
    for text in (blob, wrapped, "attachment: " + blob):
        assert clean(text).text == text


def test_the_note_says_what_was_left_out():
    cleaned = clean(f"<private>a</private> b <private>c</private> {GITHUB} {STRIPE} "
                    f"password = hunter22 and password = hunter33")
    assert cleaned.note() == ("2 <private> sections left out; secrets redacted "
                              "(github-token, stripe-access-key, password ×2)")
    assert clean("nothing to see").note() is None


def test_cleaning_is_idempotent():
    parts = ["password = hunter2", "<private>", "</private>", "<pri", "vate>", GITHUB, AWS,
             "https://u:p4ss@h", "-----BEGIN RSA PRIVATE KEY-----",
             "-----END RSA PRIVATE KEY-----", "\n", " ", "api_key: 'abc123def'", JWT,
             "[REDACTED:password]", "secret", ":", "=", '"', "x", STRIPE,
             "//r/:_authToken=npm_abc", "PuTTY-User-Key-File-2:", "Private-MAC: ab",
             ANTHROPIC, OPENAI_PROJECT, AWS_SECRET, "aws", "Bearer ", "API_TOKEN=", "_PASS=",
             "://:", "@", "setx X_TOKEN ", "the password is ", "AKIAXXXXXXXXXXXXXXXX", ";",
             "&", "...", "Password=", "sk-", "T3BlbkFJ"]
    rng = random.Random(11)
    for _ in range(3000):
        text = "".join(rng.choice(parts) for _ in range(rng.randint(1, 12)))
        once = clean(text)
        assert _unchanged(once.text), text


# -- hostile input ---------------------------------------------------------------------------

def _random_words(count: int) -> list[str]:
    rng = random.Random(3)
    return [base64.b64encode(rng.randbytes(30)).decode() for _ in range(count)]


N = 20_000
# Each shape made at a size n: at N to clean, and at N and 2N to count the work of.
HOSTILE = {
    "unclosed private tags": lambda n: "<private>" * (n // 9),
    "one unclosed tag": lambda n: "<private>" + "x" * n,
    "nested tags": lambda n: "<private>" * (n // 20) + "</private>" * (n // 20),
    "tags split around tags": lambda n: "<pri" * (n // 30) + "<private>x</private>"
                                        + "vate>" * (n // 30),
    "angle brackets and spaces": lambda n: ("<" + " " * 30) * (n // 31),
    "long base64 run": lambda n: base64.b64encode(random.Random(3).randbytes(n)).decode()[:n],
    "random hex": lambda n: "".join(random.Random(3).choices("0123456789abcdef", k=n)),
    "JWT prefixes": lambda n: "eyJ" * (n // 3),
    "JWT prefixes and a dot": lambda n: "eyJ" * (n // 3 - 1) + ".",
    "slashes": lambda n: "/" * n,
    "npm near-miss": lambda n: "//" * (n // 2 - 20) + "/:_authToken=",
    "keyword and spaces": lambda n: "key" + " " * n + "x",
    "keywords and spaces": lambda n: ("key" + " " * 16) * (n // 19),
    "keyword assignments": lambda n: "pwd=" * (n // 4),
    "short assignments": lambda n: "password= a1 " * (n // 13),
    "keywords and quotes": lambda n: "pwd'" * (n // 4),
    "keywords and colons": lambda n: "secret: " * (n // 8),
    "key headers": lambda n: "-----BEGIN RSA PRIVATE KEY-----" * (n // 31),
    "URL near-misses": lambda n: "://" + "a:" * (n // 2),
    "many AWS keys": lambda n: AWS * (n // 20),
    # the expressions added to the plugins'
    "OpenAI prefixes": lambda n: "sk-" * (n // 3),
    "OpenAI prefixes and a marker": lambda n: "sk-" * (n // 3 - 10) + "T3BlbkFJ" + "a" * 20,
    "Anthropic prefixes": lambda n: "sk-ant-" * (n // 7),
    "a long Anthropic run": lambda n: "sk-ant-api03-" + "a" * n,
    "AKIA": lambda n: "AKIA" * (n // 4),
    "placeholder run": lambda n: "AKIA" + "X" * n,
    "forty-character words": lambda n: " ".join(_random_words(n // 41)),
    "forty-character words near aws": lambda n: "\n".join(
        "aws " + word for word in _random_words(n // 46)),
    "equals signs": lambda n: "=" * n,
    "colons": lambda n: ":" * n,
    "URL starts": lambda n: "://" * (n // 3),
    "URL user and no host": lambda n: "://:" + "@" * n,
    "bearer words": lambda n: "Bearer " * (n // 7),
    "a long bearer token": lambda n: "Bearer " + "a1" * (n // 2),
    "name endings": lambda n: "TOKEN=" * (n // 6),
    "a long name": lambda n: "a" * n + "_TOKEN=abc",
    "paths assigned": lambda n: "TOKEN=/abcdefgh12" * (n // 17),
    "brackets assigned": lambda n: "password=abc(defgh12 " * (n // 21),
    "setx": lambda n: "setx A_TOKEN " * (n // 13),
    "passwords in prose": lambda n: "password is abc123def " * (n // 22),
}


def _cleaning_work(text: str) -> Work:
    """What clean(text) does in privacy.py (tests/work.py): its lines run and the characters
    handed to its expressions, the detect-secrets plugins' (through _patterns) included."""
    with Work(privacy) as work:
        patterns = privacy._patterns
        privacy._patterns = lambda plugin: [work.wrap(p) for p in patterns(plugin)]
        try:
            clean(text)
        finally:
            privacy._patterns = patterns
    return work


MB = 1_000_000
MEGABYTES = {
    "AKIA": lambda n: "AKIA" * (n // 4),
    "base64": lambda n: base64.b64encode(random.Random(3).randbytes(n * 3 // 4)).decode(),
    "equals signs": lambda n: "=" * n,
    "OpenAI prefixes": lambda n: "sk-" * (n // 3),
}


@pytest.mark.parametrize("name", list(MEGABYTES))
def test_a_megabyte_of_hostile_input_is_cleaned_with_linear_work(name):
    """Linear, not only bounded at 20 kB: quadratic work on a megabyte would take hours (and
    run into the suite's timeout). The work of half a megabyte and of a megabyte, counted."""
    half = _cleaning_work(MEGABYTES[name](MB // 2))
    whole = _cleaning_work(MEGABYTES[name](MB))
    assert whole.total < 2.5 * half.total, (name, half.total, whole.total)


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_input_is_cleaned_with_linear_work(name):
    text = HOSTILE[name](N)
    cleaned = clean(text)
    assert isinstance(cleaned.text, str)
    assert _unchanged(cleaned.text), name  # what is left is clean
    once, twice = _cleaning_work(text), _cleaning_work(HOSTILE[name](2 * N))
    assert twice.total < 2.5 * once.total, (name, once.total, twice.total)


# -- through the daemon ----------------------------------------------------------------------

SECRETIVE = (f"Deploy with the bot token {GITHUB}; the office wifi is "
             "<private>guest / tulips-in-spring</private> on floor 2, and the staging DB is "
             "postgres://app:S3cr3tPw@db.internal:5432/app")
LEAKS = (GITHUB, "tulips-in-spring", "S3cr3tPw", "<private>")


def _stored_text(call, memory_id: int) -> str:
    """The content as the database holds it (a raw read), which must match the catalog's."""
    got = call("memory_get", id=memory_id)["content"]
    rows = call("memory_query", cypher_query="MATCH (m:Memory) WHERE m.id = $id "
                "RETURN m.content AS c", params={"id": memory_id})["rows"]
    assert rows == [{"c": got}]
    return got


def _fails(call, tool, **arguments) -> str:
    with pytest.raises(ToolFailure) as failure:
        call(tool, **arguments)
    assert failure.value.code == "invalid_argument", failure.value.message
    assert "Traceback" not in failure.value.message
    return failure.value.message


def test_store_keeps_no_private_text_or_secret(call):
    out = call("memory_store", content=SECRETIVE, tags=["deploy", GITHUB, "<private>x</private>"])
    assert out["status"] == "stored"
    assert out["privacy"] == ("1 <private> section left out; secrets redacted (github-token, "
                              "url-password); 2 tags with private text or a secret left out")
    text = _stored_text(call, out["id"])
    assert not any(leak in text for leak in LEAKS)
    assert "[REDACTED:github-token]" in text and "[REDACTED:url-password]@db.internal" in text
    assert "on floor 2" in text
    assert call("memory_get", id=out["id"])["tags"] == ["deploy"]
    found = call("memory_search", query="office wifi password tulips", top_k=5)["results"]
    assert found and not any(leak in r["content"] for r in found for leak in LEAKS)
    # The same text again is the same memory: its hash is taken from the cleaned text.
    again = call("memory_store", content=SECRETIVE)
    assert again["status"] == "duplicate" and again["id"] == out["id"]
    # And a memory with nothing to leave out says nothing about privacy.
    plain = call("memory_store", content="The CI runner caches pip wheels between jobs")
    assert "privacy" not in plain


def test_store_batch_notes_name_the_items(call):
    out = call("memory_store", items=[
        {"content": "Builds run on the self-hosted runner"},
        {"content": f"The Stripe key is {STRIPE}", "tags": ["billing"]},
        {"content": "Office door code <private>4411</private> changes monthly"},
    ])
    assert out["stored"] == 3
    assert out["privacy"] == {"items.1": "secrets redacted (stripe-access-key)",
                              "items.2": "1 <private> section left out"}
    texts = [_stored_text(call, r["id"]) for r in out["results"]]
    assert texts[1] == "The Stripe key is [REDACTED:stripe-access-key]"
    assert texts[2] == "Office door code changes monthly"


def test_all_private_content_is_refused(call):
    message = _fails(call, "memory_store", content="<private>my salary is 120k</private>")
    assert NOTHING_LEFT in message and message.startswith("content:")
    message = _fails(call, "memory_store", items=[
        {"content": "A fine memory about the build cache"},
        {"content": "  <PRIVATE>only this\nand this"}])
    assert "items.1" in message and NOTHING_LEFT in message
    assert call("memory_stats")["memories"] == 0  # the batch stored nothing


def test_update_cleans_content_and_tags(call):
    first = call("memory_store", content="The staging password is kept in the vault")["id"]
    second = call("memory_store", content="Release builds are signed on the CI box")["id"]
    out = call("memory_update", id=first,
               content="The staging password = Winter2024! <private>(ask Sam)</private>")
    assert out["status"] == "updated"
    assert out["privacy"] == "1 <private> section left out; secrets redacted (password)"
    assert out["memory"]["content"] == "The staging password = [REDACTED:password]"
    assert _stored_text(call, first) == "The staging password = [REDACTED:password]"

    batch = call("memory_update", updates=[
        {"id": second, "content": f"Release builds are signed with {AWS} on the CI box"},
        {"id": first, "tags": ["staging", "password=Winter2024!"]}])
    assert batch["updated"] == 2
    assert batch["privacy"] == {
        "updates.0": "secrets redacted (aws-access-key)",
        "updates.1": "1 tag with private text or a secret left out"}
    assert AWS not in _stored_text(call, second)
    assert call("memory_get", id=first)["tags"] == ["staging"]
    message = _fails(call, "memory_update", id=second, content="<private>gone</private>")
    assert NOTHING_LEFT in message
    assert "[REDACTED:aws-access-key]" in _stored_text(call, second)  # left as it was


def _export(path, memories):
    doc = {"format": "memnest-export", "version": 1,
           "memories": [{"key": f"k{n}", **m} for n, m in enumerate(memories)]}
    path.write_text(json.dumps(doc), encoding="utf-8")


def test_import_cleans_each_item(call, workspace):
    _export(workspace / "notes.json", [
        {"content": "The cache is warmed at 06:00 UTC", "tags": ["cache"]},
        {"content": f"Ops bot token {GITHUB} <private>and the pager PIN 9911</private>",
         "tags": ["ops", f"token {GITHUB}"]},
        {"content": "Mail goes out via SG.abcdefghijklmnopqrstuv."
                    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQ"},
    ])
    out = call("memory_import", path="notes.json")
    assert out["memories"]["stored"] == 3
    assert out["privacy"] == {
        "memories.1": "1 <private> section left out; secrets redacted (github-token); "
                      "1 tag with private text or a secret left out",
        "memories.2": "secrets redacted (sendgrid-api-key)"}
    listed = call("memory_list", preview_chars=100000)["memories"]
    by_text = {m["content"]: m for m in listed}
    assert set(by_text) == {"The cache is warmed at 06:00 UTC",
                            "Ops bot token [REDACTED:github-token]",
                            "Mail goes out via [REDACTED:sendgrid-api-key]"}
    assert by_text["Ops bot token [REDACTED:github-token]"]["tags"] == ["ops"]
    # Importing the same file again changes nothing: the cleaned texts are found again.
    again = call("memory_import", path="notes.json")
    assert again["memories"]["duplicate"] == 3 and again["memories"]["stored"] == 0

    _export(workspace / "private.json", [{"content": "fine"},
                                         {"content": "<private>all of it</private>"}])
    message = _fails(call, "memory_import", path="private.json")
    assert "memories.1" in message and NOTHING_LEFT in message


def test_raw_cypher_writes_are_cleaned(call):
    next_id = call("memory_schema")["next_memory_id"]
    out = call("memory_query", cypher_query=(
        "CREATE (m:Memory {id: $id, content: $content, tags: $tags})"),
        params={"id": next_id, "content": SECRETIVE, "tags": ["deploy", f"x {STRIPE}"]})
    assert out["memories_indexed"] == [next_id]
    text = _stored_text(call, next_id)
    assert not any(leak in text for leak in LEAKS)
    assert "[REDACTED:github-token]" in text and "on floor 2" in text
    assert call("memory_get", id=next_id)["tags"] == ["deploy"]
    topics = call("memory_query", cypher_query="MATCH (t:Topic) RETURN t.name AS n")["rows"]
    assert not any(STRIPE in row["n"] for row in topics)
    # Its hash is the cleaned text's: memory_store of the same text finds it.
    assert call("memory_store", content=SECRETIVE)["id"] == next_id
    assert call("memory_stats")["index_health"]["healthy"]

    message = _fails(call, "memory_query", cypher_query=(
        "CREATE (m:Memory {id: $id, content: '<private>only private</private>'})"),
        params={"id": next_id + 1})
    assert NOTHING_LEFT in message and str(next_id + 1) in message
    rows = call("memory_query", cypher_query="MATCH (m:Memory) RETURN m.id AS id")["rows"]
    assert [r["id"] for r in rows] == [next_id]
    assert call("memory_stats")["index_health"]["healthy"]


def test_raw_changes_are_cleaned_and_survive_a_restart(fresh_daemon, workspace):
    """A raw SET of an existing memory's content (MEMORY_ALLOW_DESTRUCTIVE) is cleaned like a
    new row; content that is all private leaves the memory as it was; a restart reads back
    only cleaned text."""
    fresh_daemon.env["MEMORY_ALLOW_DESTRUCTIVE"] = "true"
    fresh_daemon.start()
    client = fresh_daemon.client(autostart=False)

    def call(tool, **arguments):
        return client.call_tool(tool, arguments, str(workspace))

    try:
        stored = call("memory_store", content=SECRETIVE)["id"]
        kept = call("memory_store", content="The nightly job prunes old snapshots")["id"]
        call("memory_query", cypher_query="MATCH (m:Memory) WHERE m.id = $id "
             "SET m.content = $content", params={"id": kept, "content":
                                                 f"The nightly job uses {STRIPE} to bill"})
        assert _stored_text(call, kept) == \
            "The nightly job uses [REDACTED:stripe-access-key] to bill"
        message = _fails(call, "memory_query", cypher_query=(
            "MATCH (m:Memory) WHERE m.id = $id SET m.content = '<private>all</private>'"),
            params={"id": kept})
        assert NOTHING_LEFT in message and "kept its content" in message
        assert _stored_text(call, kept) == \
            "The nightly job uses [REDACTED:stripe-access-key] to bill"
        assert call("memory_stats")["index_health"]["healthy"]

        fresh_daemon.stop()
        fresh_daemon.start()
        client.close()
        client = fresh_daemon.client(autostart=False)
        text = _stored_text(call, stored)
        assert "[REDACTED:stripe-access-key]" in _stored_text(call, kept)
    finally:
        client.close()
    assert not any(leak in text for leak in LEAKS)
    assert "[REDACTED:github-token]" in text
