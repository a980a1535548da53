"""Writes the labelled corpus of bench/secret_detection.py and tests/daemon/curation/test_secret_corpus.py.

tests/data/secrets/positives.jsonl: engineering notes of the kind a coding agent stores, each
holding one or more secrets of a given shape; `secrets` lists the substrings that must not
survive `privacy.clean` (for a private key, each line of its body).
tests/data/secrets/lookalikes.jsonl: notes holding things that look like secrets and are not
(commit ids, digests, integrity hashes, placeholders, prose about passwords, code that names
a token); `privacy.clean` must leave them exactly as they are.

Both hold two rounds: the first, on which the rule was tuned, and a second written blind
afterwards, measured once and then fixed. tests/data/secrets/*_heldout.jsonl were written
after all the tuning and are only measured (bench/secret_detection.py), never tuned on.

The secrets are random, from fixed seeds: running this again writes the same files.

Run:  .venv/bin/python bench/make_secret_corpus.py
"""
# ruff: noqa: E501  (the notes are data: one a line, as they are written out)
import base64
import json
import random
import re
import string
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "data" / "secrets"
SEED = 20240536
SECOND_SEED = 36  # the second round, as it was first written
HELDOUT_SEED = 3636
INSTANCES = 2  # each template is written this many times, with new values

rng = random.Random(SEED)
ALNUM = string.ascii_letters + string.digits
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"
HEX = "0123456789abcdef"


def pick(alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


# -- secrets: each returns (value, the substrings of it that must disappear) -----------------

def aws_id():
    value = rng.choice(["AKIA", "AKIA", "AKIA", "ASIA"]) + pick("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)
    return value, [value]


def aws_secret():
    while True:
        value = pick(B64, 40)
        if value[0] not in "+/" and any(c.isdigit() for c in value):
            return value, [value]


def aws_session():
    value = "IQoJb3JpZ2luX2Vj" + pick(B64, rng.randint(280, 360))
    return value, [value]


def anthropic():
    value = "sk-ant-api03-" + pick(URLSAFE, 93) + "AA"
    return value, [value]


def anthropic_admin():
    value = "sk-ant-admin01-" + pick(URLSAFE, 93) + "AA"
    return value, [value]


def openai_legacy():
    value = "sk-" + pick(ALNUM, 20) + "T3BlbkFJ" + pick(ALNUM, 20)
    return value, [value]


def openai_project():
    if rng.random() < 0.3:
        value = "sk-proj-" + pick(ALNUM, 48)
    else:
        value = "sk-proj-" + pick(URLSAFE, 74) + "T3BlbkFJ" + pick(URLSAFE, 74)
    return value, [value]


def openai_service():
    value = "sk-svcacct-" + pick(URLSAFE, 74) + "T3BlbkFJ" + pick(URLSAFE, 74)
    return value, [value]


def github_classic():
    value = rng.choice(["ghp", "ghp", "gho", "ghs", "ghu"]) + "_" + pick(ALNUM, 36)
    return value, [value]


def github_pat():
    value = "github_pat_11" + pick(string.ascii_uppercase + string.digits, 20) + "_" \
        + pick(ALNUM, 59)
    return value, [value]


def gitlab():
    value = "glpat-" + pick(URLSAFE, 20)
    return value, [value]


def slack_bot():
    value = (f"xoxb-{pick(string.digits, 12)}-{pick(string.digits, 13)}-"
             f"{pick(ALNUM, 24)}")
    return value, [value]


def slack_user():
    value = (f"xoxp-{pick(string.digits, 12)}-{pick(string.digits, 12)}-"
             f"{pick(string.digits, 13)}-{pick(HEX, 32)}")
    return value, [value]


def slack_webhook():
    last = pick(ALNUM, 24)
    value = (f"https://hooks.slack.com/services/T{pick(string.ascii_uppercase + string.digits, 8)}"
             f"/B{pick(string.ascii_uppercase + string.digits, 10)}/{last}")
    return value, [last]


def stripe(prefix: str):
    def make():
        body = pick(ALNUM, 24) if rng.random() < 0.4 else "51" + pick(ALNUM, 97)
        value = prefix + body
        return value, [value]
    return make


def google_api():
    value = "AIza" + pick(URLSAFE, 35)
    return value, [value]


def jwt():
    header = rng.choice(['{"alg":"HS256","typ":"JWT"}', '{"alg":"RS256","typ":"JWT","kid":"'
                         + pick(HEX, 16) + '"}', '{"typ":"JWT","alg":"ES256"}'])
    claims = {"sub": str(rng.randint(10**5, 10**9)), "iat": rng.randint(1_600_000_000, 1_750_000_000)}
    if rng.random() < 0.6:
        claims["email"] = rng.choice(["dev", "ops", "ana", "li.wei"]) + "@example.com"
    if rng.random() < 0.5:
        claims["scope"] = rng.choice(["read write", "admin", "repo:read"])
    value = ".".join([b64url(header.encode()), b64url(json.dumps(claims).encode()),
                      b64url(rng.randbytes(rng.choice([32, 64, 256])))])
    return value, [value]


def bearer():
    value = pick(ALNUM + "-._~", rng.randint(32, 64))
    while not (any(c.isdigit() for c in value) and any(c.isalpha() for c in value)):
        value = pick(ALNUM + "-._~", 40)
    return value, [value]


def _key_body(size: int, lead: bytes) -> str:
    return b64(lead + rng.randbytes(size))


def _lines(body: str, width: int = 64) -> list[str]:
    return [body[i:i + width] for i in range(0, len(body), width)]


def _pem(label: str, size: int, lead: bytes, joiner: str = "\n"):
    body = _lines(_key_body(size, lead))
    value = joiner.join([f"-----BEGIN {label}-----", *body, f"-----END {label}-----"])
    return value, [line for line in body if len(line) >= 16]


def pem_rsa():
    return _pem("RSA PRIVATE KEY", rng.choice([600, 900, 1190]), b"\x30\x82\x04\xa4\x02\x01")


def pem_pkcs8():
    return _pem("PRIVATE KEY", rng.choice([600, 1210]), b"\x30\x82\x04\xbe\x02\x01\x00")


def pem_ec():
    return _pem("EC PRIVATE KEY", 118, b"\x30\x77\x02\x01\x01\x04\x20")


def pem_encrypted():
    return _pem("ENCRYPTED PRIVATE KEY", rng.choice([700, 1250]), b"\x30\x82\x05\x1e\x30\x40")


def pem_openssh():
    return _pem("OPENSSH PRIVATE KEY", rng.choice([380, 420, 1800]),
                b"openssh-key-v1\x00\x00\x00\x00\x04none", joiner="\n")


def pem_collapsed():
    label = rng.choice(["RSA PRIVATE KEY", "PRIVATE KEY", "OPENSSH PRIVATE KEY"])
    return _pem(label, rng.choice([500, 900]), b"\x30\x82\x04\xa4\x02\x01", joiner=" ")


def sa_private_key():
    body = _lines(_key_body(1190, b"\x30\x82\x04\xbe\x02\x01\x00"))
    value = "\\n".join(["-----BEGIN PRIVATE KEY-----", *body, "-----END PRIVATE KEY-----"]) + "\\n"
    return value, [line for line in body if len(line) >= 16]


def sa_json():
    key, secrets = sa_private_key()
    project = rng.choice(["acme-prod", "memnest-ci", "data-lake-391", "billing-eu"])
    account = rng.choice(["ci-deployer", "bq-reader", "terraform", "gcs-uploader"])
    doc = {"type": "service_account", "project_id": project, "private_key_id": pick(HEX, 40),
           "private_key": "@@KEY@@",
           "client_email": f"{account}@{project}.iam.gserviceaccount.com",
           "client_id": pick(string.digits, 21),
           "auth_uri": "https://accounts.google.com/o/oauth2/auth",
           "token_uri": "https://oauth2.googleapis.com/token",
           "auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs",
           "client_x509_cert_url": "https://www.googleapis.com/robot/v1/metadata/x509/"
                                   f"{account}%40{project}.iam.gserviceaccount.com",
           "universe_domain": "googleapis.com"}
    indent = rng.choice([None, 2])
    text = json.dumps(doc, indent=indent).replace("@@KEY@@", key)
    return text, secrets


def password():
    """A password as people choose or generate them: words and digits, or random."""
    style = rng.random()
    if style < 0.35:
        words = ["Tulip", "harbor", "Falcon", "quartz", "Maple", "river", "Copper", "orbit"]
        value = rng.choice(words) + rng.choice(["", "-", "_", "."]) + rng.choice(words) \
            + str(rng.randint(10, 9999)) + rng.choice(["", "!", "#", "?"])
    elif style < 0.7:
        value = pick(ALNUM, rng.randint(14, 24))
    else:
        value = pick(ALNUM + "!#%^*-_.~", rng.randint(12, 22))
    if not any(c.isdigit() for c in value):
        value += str(rng.randint(0, 99))
    return value, [value]


def url_password():
    """A password inside a URL: what the URL may carry without encoding, or encoded."""
    value = pick(ALNUM + "-_.~", rng.randint(12, 26))
    if rng.random() < 0.3:
        value = value[:6] + rng.choice(["%40", "%21", "%23", "%2F"]) + value[6:]
    if not any(c.isdigit() for c in value):
        value += str(rng.randint(0, 99))
    return value, [value]


def raw_password():
    """A URL password pasted with characters it should have had encoded."""
    value = pick(ALNUM, rng.randint(6, 10)) + rng.choice("!$&*+,;=") + pick(ALNUM, rng.randint(4, 9))
    return value, [value]


def hex_secret():
    value = pick(HEX, rng.choice([32, 40, 64]))
    return value, [value]


def random_token():
    value = pick(ALNUM, rng.randint(24, 48))
    return value, [value]


def django_secret():
    value = "django-insecure-" + pick(string.ascii_lowercase + string.digits + "!@#%^&*(-_=+)", 50)
    return value, [value]


def npm_token():
    value = "npm_" + pick(ALNUM, 36)
    return value, [value]


# -- fillers: values that are not secrets ------------------------------------------------------

def sha40():
    return pick(HEX, 40), []


def sha_short():
    return pick(HEX, rng.randint(7, 12)), []


def sha256hex():
    return pick(HEX, 64), []


def md5hex():
    return pick(HEX, 32), []


def uuid4():
    h = pick(HEX, 32)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{rng.choice('89ab')}{h[17:20]}-{h[20:32]}", []


def uuid_upper():
    return uuid4()[0].upper(), []


def integrity512():
    return "sha512-" + b64(rng.randbytes(64)), []


def integrity256():
    return "sha256-" + b64(rng.randbytes(32)), []


def integrity1():
    return "sha1-" + b64(rng.randbytes(20)), []


def png_base64():
    header = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"
    return b64(header + rng.randbytes(rng.randint(120, 1400))), []


def jpeg_base64():
    return b64(b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + rng.randbytes(rng.randint(200, 900))), []


def semver():
    return f"{rng.randint(0, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 40)}", []


def colour():
    return "#" + pick("0123456789abcdefABCDEF", rng.choice([3, 6, 8])), []


def port():
    return str(rng.choice([5432, 3306, 6379, 5672, 27017, 8080, 9200, 8443])), []


def ulid():
    return pick("0123456789ABCDEFGHJKMNPQRSTVWXYZ", 26), []


def epoch():
    return str(rng.randint(1_600_000_000, 1_760_000_000)), []


def account():
    return pick(string.digits, 12), []


def stripe_object():
    return rng.choice(["cus_", "pi_", "ch_", "sub_", "in_", "prod_", "price_"]) + pick(ALNUM, 14), []


def b64_text():
    sentence = rng.choice(["hello world, this is fixture data",
                           "the quick brown fox jumps over the lazy dog",
                           '{"name": "memnest", "version": 3}', "user=anonymous;lang=en",
                           "lorem ipsum dolor sit amet, consectetur"])
    return b64(sentence.encode()), []


def etag():
    return pick(HEX, 32) + rng.choice(["", "-" + str(rng.randint(2, 40))]), []


def pod_suffix():
    return pick("bcdfghjklmnpqrstvwxz2456789", 10) + "-" + pick("bcdfghjklmnpqrstvwxz2456789", 5), []


def filler(values):
    def make():
        return rng.choice(values), []
    return make


SERVICES = ["billing-api", "ingest-worker", "auth-gateway", "search-indexer", "notif-svc",
            "reporting", "checkout", "edge-proxy", "ml-scorer", "audit-log"]
HOSTS = ["db-prod-1.internal", "pg.staging.acme.io", "10.0.3.14", "mysql-eu.acme.net",
         "cache-02.internal", "rds-main.c9x2k1.eu-west-1.rds.amazonaws.com", "localhost",
         "mq.internal.acme.io", "db.dev.local", "172.20.0.5"]
PEOPLE = ["Priya", "Tomasz", "Ana", "Kenji", "Lea", "Marcus", "Sofia", "Dmitri", "Amara", "Joel"]
DATES = ["2024-03-11", "2024-06-02", "2023-11-28", "2025-01-15", "last Tuesday", "yesterday",
         "on Friday", "2024-09-30"]
REGIONS = ["eu-west-1", "us-east-1", "ap-southeast-2", "eu-central-1", "us-west-2"]
BUCKETS = ["acme-backups", "ml-artifacts-prod", "static-assets-eu", "logs-archive-2024"]
REPOS = ["acme/platform", "acme/infra", "data-team/pipelines", "web/storefront"]
DBS = ["app", "billing", "analytics", "orders", "users_prod"]

GENERATORS = {
    "aws_id": aws_id, "aws_secret": aws_secret, "aws_session": aws_session,
    "anthropic": anthropic, "anthropic_admin": anthropic_admin,
    "openai_legacy": openai_legacy, "openai_project": openai_project,
    "openai_service": openai_service, "gh": github_classic, "gh_pat": github_pat,
    "glpat": gitlab, "xoxb": slack_bot, "xoxp": slack_user, "slack_hook": slack_webhook,
    "sk_live": stripe("sk_live_"), "rk_live": stripe("rk_live_"), "sk_test": stripe("sk_test_"),
    "google_api": google_api, "jwt": jwt, "bearer": bearer,
    "pem_rsa": pem_rsa, "pem_pkcs8": pem_pkcs8, "pem_ec": pem_ec,
    "pem_encrypted": pem_encrypted, "pem_openssh": pem_openssh, "pem_collapsed": pem_collapsed,
    "sa_key": sa_private_key, "sa_json": sa_json,
    "pw": password, "url_pw": url_password, "raw_pw": raw_password, "hex": hex_secret,
    "token": random_token, "django": django_secret, "npm": npm_token,
    # not secrets
    "sha": sha40, "short_sha": sha_short, "sha256": sha256hex, "md5": md5hex, "uuid": uuid4,
    "UUID": uuid_upper, "sri512": integrity512, "sri256": integrity256, "sri1": integrity1,
    "png": png_base64, "jpeg": jpeg_base64, "semver": semver, "colour": colour, "port": port,
    "ulid": ulid, "epoch": epoch, "account": account, "stripe_obj": stripe_object,
    "b64text": b64_text, "etag": etag, "pod": pod_suffix,
    "svc": filler(SERVICES), "host": filler(HOSTS), "who": filler(PEOPLE), "date": filler(DATES),
    "region": filler(REGIONS), "bucket": filler(BUCKETS), "repo": filler(REPOS),
    "db": filler(DBS), "n": lambda: (str(rng.randint(2, 90)), []),
}
_FIELD = re.compile(r"\{\{|\}\}|\{(\w+)(?:~\d)?\}")  # {name}, {name~2}; {{ and }} are braces


def fill(template: str) -> tuple[str, list[str]]:
    values: dict[str, tuple[str, list[str]]] = {}

    def one(m: re.Match) -> str:
        name = m.group(0)
        if m.group(1) is None:
            return name[0]
        if name not in values:
            values[name] = GENERATORS[m.group(1)]()
        return values[name][0]

    text = _FIELD.sub(one, template)
    secrets = [s for _, parts in values.values() for s in parts]
    return text, secrets


# -- the notes -----------------------------------------------------------------------------

POSITIVES: dict[str, list[str]] = {
    "aws-access-key": [
        "The leaked access key {aws_id} was deactivated in IAM {date}; the new one lives in the CI vault.",
        "CloudTrail shows {aws_id} calling s3:ListBucket from an unknown IP, {who} is revoking it.",
        "Terraform plan failed: the provider picked up {aws_id} from the shell instead of the SSO profile.",
        "boto3 was using access key id {aws_id} (the old deploy user) because AWS_PROFILE was unset.",
        "Key id for the read-only reporting user: {aws_id}. Ask {who} for the other half.",
    ],
    "aws-secret-key": [
        "Use key {aws_id} with secret {aws_secret} for the {bucket} bucket; region {region}.",
        "CI deploy creds: {aws_id} / {aws_secret} (rotated {date}).",
        "aws configure on the build box: access key {aws_id}, secret key {aws_secret}, region {region}, output json.",
        "~/.aws/credentials on the runner:\n[default]\naws_access_key_id = {aws_id}\naws_secret_access_key = {aws_secret}\nregion = {region}",
        "Ran `AWS_ACCESS_KEY_ID={aws_id} AWS_SECRET_ACCESS_KEY={aws_secret} aws s3 sync ./dist s3://{bucket}` to push the hotfix.",
        "The secret for {aws_id} is {aws_secret} -- do not commit it, it belongs to the prod deployer.",
        "Temporary creds from sts assume-role:\nAccessKeyId: {aws_id}\nSecretAccessKey: {aws_secret}\nSessionToken: {aws_session}",
        "sts output was {{\"Credentials\": {{\"AccessKeyId\": \"{aws_id}\", \"SecretAccessKey\": \"{aws_secret}\", \"SessionToken\": \"{aws_session}\"}}}}",
        "s3 = boto3.client(\"s3\", aws_access_key_id=\"{aws_id}\", aws_secret_access_key=\"{aws_secret}\") worked locally, switch to the role before merging.",
        "AWS secret access key {aws_secret} (id {aws_id}) is what the legacy cron on {host} still uses.",
        "Backups: the IAM user backup-writer has {aws_id} and the secret {aws_secret}; it can only PutObject.",
        "In the Jenkins credentials store the aws pair is {aws_id} + {aws_secret}.",
        "export AWS_ACCESS_KEY_ID={aws_id}\nexport AWS_SECRET_ACCESS_KEY={aws_secret}\nexport AWS_DEFAULT_REGION={region}",
        "The aws secret is {aws_secret} for the staging account, key id in 1Password.",
    ],
    "anthropic-key": [
        "Set ANTHROPIC_API_KEY={anthropic} in .env.local before running the eval harness.",
        "The Claude key for the summariser is {anthropic} (team workspace, billed to research).",
        "client = anthropic.Anthropic(api_key=\"{anthropic}\") -- replace with the env var before committing.",
        "curl https://api.anthropic.com/v1/messages -H \"x-api-key: {anthropic}\" -H \"anthropic-version: 2023-06-01\" returned 529 overloaded.",
        "Admin key for usage reports: {anthropic_admin}; only {who} and I have it.",
        "Org admin API key {anthropic_admin} can create workspaces, keep it out of CI.",
        "The eval run used {anthropic} and hit the rate limit after 400 requests.",
        "Rotated the Anthropic key {date}: old one {anthropic} is revoked, the new one is in Vault.",
        "Ops note: `export ANTHROPIC_API_KEY='{anthropic}'` in ~/.zshrc on the GPU box.",
    ],
    "openai-key": [
        "OPENAI_API_KEY={openai_project} is the project key for the embeddings backfill.",
        "Old personal key {openai_legacy} still works for the notebook, revoke it after the demo.",
        "openai.OpenAI(api_key=\"{openai_project}\") in scripts/backfill.py (temporary!).",
        "The service account key for the support bot is {openai_service}.",
        "curl -H \"Authorization: Bearer {openai_project}\" https://api.openai.com/v1/models works from the VPN.",
        "Embeddings job failed with 401: key {openai_legacy} was disabled by the org admin.",
        "Team key: {openai_project} (usage cap 200 USD/month).",
        "The batch worker reads {openai_service} from its k8s secret; it leaked into the logs once.",
    ],
    "github-token": [
        "Bot token for the release workflow: {gh} (scopes repo, workflow).",
        "git clone https://x-access-token:{gh}@github.com/{repo}.git is how the runner checks out.",
        "GH_TOKEN={gh} gh pr list --repo {repo} --state merged",
        "The fine-grained PAT {gh_pat} only has contents:read on {repo}.",
        "Renovate uses {gh_pat}, expires in 90 days.",
        "Found {gh} hardcoded in scripts/release.sh, moved it to the Actions secrets.",
        "export GITHUB_TOKEN={gh_pat}",
        "Installation token {gh} from the GitHub App lasts one hour; regenerate with the app key.",
        "OAuth token of the dashboard integration: {gh}",
    ],
    "gitlab-token": [
        "GitLab PAT for the mirror job is {glpat} (api scope).",
        "git remote set-url origin https://oauth2:{glpat}@gitlab.acme.io/platform/api.git",
        "The runner registration used {glpat}; rotate it when {who} leaves.",
        "curl --header \"PRIVATE-TOKEN: {glpat}\" https://gitlab.acme.io/api/v4/projects",
        "CI_JOB trigger works with {glpat} but not with the deploy token.",
    ],
    "slack-token": [
        "Slack bot token {xoxb} posts the deploy summaries to #releases.",
        "The alerting webhook is {slack_hook} (channel #oncall).",
        "User token {xoxp} was used to export the channel history, revoke it.",
        "SLACK_BOT_TOKEN={xoxb} SLACK_SIGNING_SECRET={hex} in the bot's .env.",
        "Post to {slack_hook} with a JSON body {{\"text\": \"deploy done\"}}.",
        "incoming webhook for #data-quality: {slack_hook}",
        "The standup bot authenticates with {xoxb}; scopes chat:write, channels:read.",
    ],
    "stripe-key": [
        "Stripe live secret key: {sk_live} (only the billing service has it).",
        "Restricted key {rk_live} can read charges and nothing else; used by the finance export.",
        "Test mode key {sk_test} for local checkout development.",
        "STRIPE_SECRET_KEY={sk_live} in the production env file, {who} is moving it to SSM.",
        "stripe.api_key = \"{sk_test}\" in conftest.py for the payment tests.",
        "curl https://api.stripe.com/v1/charges -u {sk_live}: -d amount=2000 -d currency=eur",
        "The webhook replay script still has {sk_test} hardcoded.",
        "Refund tool on {host} uses {rk_live}.",
    ],
    "google-service-account": [
        "GCP service account for the uploader, paste into /etc/uploader/sa.json:\n{sa_json}",
        "The key file we got from {who}: {sa_json}",
        "In the Helm values the SA key sits under gcp.credentials: \"private_key\": \"{sa_key}\"",
        "Only the private key of the BigQuery SA changed: \"private_key\": \"{sa_key}\", the rest of the JSON is as before.",
        "GOOGLE_APPLICATION_CREDENTIALS points at a file holding {sa_json}",
    ],
    "google-api-key": [
        "Maps JavaScript API key {google_api}, restricted to *.acme.io referrers.",
        "The Firebase config has apiKey: \"{google_api}\" (web app).",
        "YouTube Data API quota is tied to {google_api}.",
        "curl 'https://generativelanguage.googleapis.com/v1beta/models?key={google_api}' lists the Gemini models.",
        "GOOGLE_API_KEY={google_api} for the geocoding batch.",
        "Places autocomplete stopped working: key {google_api} hit its daily quota.",
    ],
    "jwt": [
        "Authorization: Bearer {jwt} -- this one is valid for a day, good for repro.",
        "The staging admin session cookie is {jwt}",
        "Decoded {jwt} and the exp claim was already in the past, that is why the gateway says 401.",
        "access_token={jwt}&token_type=bearer came back from the auth callback.",
        "Service-to-service JWT used by {svc}: {jwt}",
        "{{\"id_token\": \"{jwt}\", \"expires_in\": 3600}}",
    ],
    "bearer-token": [
        "curl -H 'Authorization: Bearer {bearer}' https://api.acme.io/v2/orders returns 200 again.",
        "The partner API wants Authorization: Bearer {bearer} on every call.",
        "Postman collection had \"Authorization\": \"Bearer {bearer}\" in the shared environment.",
        "Datadog API calls: -H \"Authorization: Bearer {bearer}\" from the runbook.",
    ],
    "private-key": [
        "Deploy key for {repo}:\n{pem_openssh}",
        "The TLS key for api.acme.io (cert renewed {date}):\n{pem_rsa}",
        "Signing key used by the JWT issuer:\n{pem_ec}",
        "Service key in PKCS#8:\n{pem_pkcs8}\nThe matching cert is in the ACM console.",
        "Encrypted key (passphrase in 1Password):\n{pem_encrypted}",
        "Pasted from the chat, newlines got eaten: {pem_collapsed}",
        "ssh into the bastion with this key (save as ~/.ssh/bastion, chmod 600): {pem_openssh}",
        "key.pem for the webhook signer: {pem_collapsed} (same as in the wiki)",
        "```\n{pem_rsa}\n```\nThat is the old SAML signing key, still trusted by the IdP.",
    ],
    "connection-string": [
        "Prod DB: postgres://app:{url_pw}@{host}:5432/{db}",
        "DATABASE_URL=postgresql://migrator:{url_pw}@{host}:5432/{db}?sslmode=require",
        "mysql://root:{url_pw}@{host}:3306/{db} is the replica {who} uses for reports.",
        "Atlas cluster: mongodb+srv://svc_reader:{url_pw}@cluster0.x7kq2.mongodb.net/{db}?retryWrites=true&w=majority",
        "Cache is redis://:{url_pw}@{host}:6379/0 (no user, just the requirepass).",
        "Celery broker: amqp://celery:{url_pw}@{host}:5672/jobs",
        "JDBC url for the reporting tool: jdbc:postgresql://{host}:5432/{db}?user=report&password={pw}",
        "SQL Server: Server=tcp:sql-prod.database.windows.net,1433;Initial Catalog={db};User ID=sa_app;Password={pw};Encrypt=True;",
        "ADO string from the old .NET service: Data Source={host};Initial Catalog={db};User Id=webuser;Pwd={pw};",
        "psql 'postgres://readonly:{raw_pw}@{host}/{db}' works, the app's URL does not.",
        "rediss://default:{url_pw}@redis-12345.c1.eu-west-1-2.ec2.cloud.redislabs.com:12345",
        "The Grafana datasource uses mysql://grafana:{raw_pw}@{host}:3306/metrics",
        "amqps://worker:{url_pw}@b-1234.mq.{region}.amazonaws.com:5671",
        "spring.datasource.url=jdbc:mysql://{host}:3306/{db}\nspring.datasource.username=app\nspring.datasource.password={pw}",
        "SQLALCHEMY_DATABASE_URI = \"postgresql+psycopg://api:{url_pw}@{host}/{db}\"",
    ],
    "env-assignment": [
        "DATABASE_PASSWORD={pw}",
        "API_TOKEN={token}",
        "SECRET_KEY={django}",
        "export FOO_TOKEN={token}",
        "Local .env for the worker:\nDEBUG=false\nREDIS_HOST={host}\nSMTP_PASS={pw}\nSENTRY_AUTH_TOKEN={hex}",
        "docker run -e POSTGRES_PASSWORD={pw} -p 5432:5432 postgres:16",
        "export VAULT_TOKEN={token}",
        "In the compose file: environment:\n  - MINIO_ROOT_PASSWORD={pw}\n  - MINIO_ROOT_USER=admin",
        "JWT_SECRET={hex} must match between {svc} and the gateway.",
        "Set SESSION_SECRET={token} on the new nodes too.",
        "kubectl create secret generic api --from-literal=API_KEY={token}",
        "Heroku config: ENCRYPTION_KEY={hex}",
        "ADMIN_PASSWORD=\"{pw}\" in the seed script (local only).",
        "export NPM_TOKEN={npm}",
        "GOOGLE_CREDENTIALS={token} is the base64 of the SA file for the CI job.",
        "OAUTH_CLIENT_SECRET={token}\nOAUTH_CLIENT_ID=acme-dashboard",
        "DB_PWD={pw} for the legacy PHP app",
        "webhook signing: WEBHOOK_SECRET={hex}",
        "The mailer needs MAILGUN_API_KEY={hex} and MAILGUN_DOMAIN=mg.acme.io.",
        "export ACCESS_TOKEN={token}",
        "redis.conf: requirepass {pw}",
        "RABBITMQ_DEFAULT_PASS={pw}",
        "secrets.yaml (sops not set up yet): db_password: {pw}",
        "config.toml:\n[auth]\nsigning_key = \"{hex}\"\nissuer = \"acme\"",
    ],
}

LOOKALIKES: dict[str, list[str]] = {
    "git-sha": [
        "The regression came in with {sha}; reverting it fixes the flaky upload test.",
        "git bisect landed on {short_sha} (\"bump tantivy\"), {who} is looking at it.",
        "Cherry-picked {short_sha} and {short_sha~2} onto release/2.4.",
        "HEAD of main is {sha} after the merge of #{n}.",
        "Pinned the action to actions/checkout@{sha} instead of a tag.",
        "pip install git+https://github.com/{repo}.git@{sha}",
        "Deployed build {short_sha} to staging at 14:02, prod still on {short_sha~2}.",
        "`git rev-parse HEAD` prints {sha} on the runner but {sha~2} locally: the runner has a shallow clone.",
        "See commit {short_sha} for the secret rotation script changes.",
        "Blame says {sha} (by {who}) introduced the token refresh bug.",
    ],
    "uuid": [
        "Request {uuid} timed out after 30 s in {svc}.",
        "Tenant id {uuid} is the one with the corrupted index.",
        "The trace id {uuid} shows the retry storm.",
        "Workspace {UUID} in the Terraform Cloud URL.",
        "Session token table row {uuid} was duplicated by the migration.",
        "Azure subscription {uuid}, resource group rg-{svc}.",
    ],
    "base64-image": [
        "Favicon inlined as data:image/png;base64,{png} in the email template.",
        "The avatar placeholder is <img src=\"data:image/jpeg;base64,{jpeg}\">",
        "Snapshot test stores the chart as data:image/png;base64,{png}",
        "CSS background: url(data:image/png;base64,{png});",
    ],
    "integrity-hash": [
        "package-lock.json: \"integrity\": \"{sri512}\" for left-pad after the reinstall.",
        "yarn.lock entry:\n  resolved \"https://registry.yarnpkg.com/lodash/-/lodash-4.17.21.tgz#{sha}\"\n  integrity {sri512}",
        "The CDN script tag needs integrity=\"{sri256}\" crossorigin=\"anonymous\".",
        "poetry.lock: files = [{{file = \"requests-2.32.3-py3-none-any.whl\", hash = \"sha256:{sha256}\"}}]",
        "Old lockfile entries still use {sri1} integrity hashes.",
        "pip --require-hashes failed: expected sha256:{sha256}, got sha256:{sha256~2}.",
        "pnpm-lock.yaml: resolution: {{integrity: {sri512}}}",
        "Cargo.lock checksum = \"{sha256}\" for serde 1.0.197",
        "go.sum: golang.org/x/crypto v0.21.0 h1:{sri256}",
    ],
    "docker-digest": [
        "Pinned the base image to python:3.12-slim@sha256:{sha256}.",
        "The running pod uses ghcr.io/{repo}@sha256:{sha256}, not the tag we pushed.",
        "docker pull returned Digest: sha256:{sha256}",
        "Image ID sha256:{sha256} is 1.2 GB, most of it CUDA.",
        "kubectl describe shows imageID: docker.io/library/redis@sha256:{sha256}",
    ],
    "content-hash": [
        "The artifact's md5 is {md5} and the S3 ETag is \"{etag}\".",
        "sha256sum of the release tarball: {sha256}",
        "Cache key is the hash of poetry.lock ({sha256}), so any lock change busts it.",
        "Blake2 digest {sha256} identifies the embedding snapshot.",
        "The file's sha1 is {sha}; git's blob id differs because of the header.",
        "content_hash {sha256} shows up twice in the memories table: a dedup bug.",
    ],
    "placeholder": [
        "Example from the AWS docs: aws_access_key_id = AKIAXXXXXXXXXXXXXXXX, never paste a real one here.",
        "The README uses sk-ant-api03-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx as the sample key.",
        "Replace <your-api-key> with the key from the console.",
        "In docker-compose: API_KEY=${{API_KEY}} and the value comes from the shell.",
        "Template .env.example has GITHUB_TOKEN=your_token_here and DB_PASSWORD=changeme.",
        "password: changeme (that is the default, the installer forces a new one)",
        "Set OPENAI_API_KEY=sk-... in your shell before running the notebook.",
        "The config sample says api_key: \"YOUR_API_KEY\"",
        "Use ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx style tokens in the docs, never real ones.",
        "STRIPE_SECRET_KEY=sk_test_xxxxxxxxxxxxxxxxxxxxxxxx in the contributor guide.",
        "export ANTHROPIC_API_KEY=<paste your key>",
        "DATABASE_URL=postgres://user:${{DB_PASSWORD}}@{host}:5432/{db}",
        "token: ${{{{ secrets.GITHUB_TOKEN }}}} in the workflow, nothing hardcoded.",
        "AWS_SECRET_ACCESS_KEY: ${{{{ secrets.AWS_SECRET_ACCESS_KEY }}}}",
        "SECRET_KEY=<generate with openssl rand -hex 32>",
        "api_key = \"<API_KEY>\"  # filled in by the installer",
        "The doc example key AKIA0000000000000000 is rejected by the validator, as it should be.",
        "password=${{DB_PASS}} in the compose file, password: <your password> in the docs",
        "REDIS_PASSWORD= (empty: the dev redis has no auth)",
        "export GITHUB_TOKEN=$(gh auth token)",
        "SLACK_WEBHOOK_URL=https://hooks.slack.com/services/XXX/YYY/ZZZ in the example env.",
        "mongodb+srv://<username>:<password>@cluster0.example.mongodb.net/",
        "The API key goes in the X-Api-Key header; the sample uses xxxxxxxx.",
        "postgres://user:password@host:5432/db is the format DATABASE_URL expects.",
    ],
    "version": [
        "Upgraded fastapi {semver} -> {semver~2}; pydantic stays on 2.7.",
        "node {semver}, npm {semver~2} on the CI image.",
        "The regression started in ladybug {semver}; pin to {semver~2}.",
        "Changelog: v{semver} fixes the token refresh race (#{n}).",
        "Helm chart version {semver}, appVersion {semver~2}.",
    ],
    "colour": [
        "Brand colours: primary {colour}, accent {colour~2}, error {colour~3}.",
        "The dark theme background is {colour}; borders use {colour~2} at 40% opacity.",
        "Tailwind config maps brand-500 to {colour}.",
    ],
    "prose": [
        "The token expires after 30 minutes; the refresh token lasts 14 days.",
        "Rotate the secret key every 90 days and keep the previous one for a grace period.",
        "password: must be 12 characters, with one digit and one symbol.",
        "Never log the API key; the middleware masks the Authorization header.",
        "The password reset flow sends a magic link, the link token is single-use.",
        "We store secrets in Vault under kv/ and the app reads them at startup.",
        "Key rotation for the KMS master key is automatic (yearly).",
        "If the token is missing, the client falls back to anonymous access with a lower rate limit.",
        "Passwords are hashed with argon2id (m=64MB, t=3, p=4).",
        "The secret manager is AWS Secrets Manager; the Lambda reads the DB password from it.",
        "Password: required, at least 12 characters.",
        "Our API keys are scoped per project and can be revoked from the dashboard.",
        "Don't put the private key in the repo; the deploy job fetches it from SSM.",
        "The SSH key of the CI user was regenerated after {who} left.",
        "Key: the primary key of events is (tenant_id, ts).",
        "Tokens per minute limit is 40k for the embedding model.",
        "secret: a Kubernetes Secret named db-creds, mounted at /var/run/secrets/db.",
        "The access token and the id token are both JWTs; only the access token goes to the API.",
        "Rotated: staging DB password, Stripe restricted key, Slack bot token ({date}).",
        "The GitHub token needs the workflow scope to update .github/workflows files.",
        "pwd is /srv/{svc} on the host, the venv is next to it.",
        "Password managers autofill breaks on the new login form because the field is named pass.",
        "The session secret must be the same on every node, otherwise cookies fail to decode.",
        "To get a token run `gh auth token`; to get the AWS keys use `aws sso login`.",
        "Auth: the password grant is deprecated, use the authorization code flow with PKCE.",
        "The key question is whether the cache key includes the tenant.",
        "Secret scanning on GitHub flagged a test fixture, false alarm.",
        "OpenAI keys start with sk- and Anthropic keys with sk-ant-; both go in the env, never in code.",
        "AWS access key ids start with AKIA (long-term) or ASIA (temporary, from STS).",
        "Private keys in PEM start with -----BEGIN and the file mode must be 600.",
        "max_tokens: 4096, temperature: 0.2, top_p: 1 for the summariser.",
        "The secret sauce of the ranking is the recency boost.",
    ],
    "code": [
        "api_key = os.environ[\"API_KEY\"]",
        "token = next(tokens)",
        "password = getpass.getpass(\"DB password: \")",
        "secret_key = settings.SECRET_KEY",
        "API_TOKEN = os.getenv(\"API_TOKEN\")",
        "const token = await getAccessToken(scopes);",
        "self.api_key = api_key",
        "def login(username: str, password: str) -> Session:",
        "password_hash = bcrypt.hashpw(password.encode(), bcrypt.gensalt())",
        "if not token: raise AuthError(\"missing token\")",
        "MAX_TOKENS = 4096",
        "headers = {{\"Authorization\": f\"Bearer {{token}}\"}}",
        "client = Anthropic(api_key=os.environ[\"ANTHROPIC_API_KEY\"])",
        "aws_secret_access_key=creds.secret_key,",
        "let secret = std::env::var(\"WEBHOOK_SECRET\")?;",
        "password := os.Getenv(\"DB_PASSWORD\")",
        "key = f\"user:{{user_id}}:profile\"",
        "token_count = len(tokenizer.encode(text))",
        "SECRET_KEY = env(\"DJANGO_SECRET_KEY\")",
        "private_key = load_pem_private_key(data, password=None)",
        "for key, value in sorted(config.items()):",
        "PRIMARY_KEY = \"id\"",
        "auth_token = request.headers.get(\"X-Auth-Token\")",
        "export GITHUB_TOKEN=\"$GH_TOKEN\"",
        "stripe.api_key = os.environ['STRIPE_SECRET_KEY']",
        "jwt.decode(token, key=public_key, algorithms=[\"RS256\"])",
        "cursor.execute(\"SELECT id FROM users WHERE api_key_hash = %s\", (digest,))",
        "password=None, api_key: None, secret: false",
        "return {{\"token\": token, \"expires_in\": ttl}}",
        "SORT_KEY=created_at and PARTITION_KEY=tenant_id in the Dynamo table definition.",
    ],
    "url": [
        "Health check: https://api.acme.io/v2/health?verbose=1",
        "Clone with git@github.com:{repo}.git or https://github.com/{repo}.git",
        "The dashboard is at http://localhost:3000/d/{short_sha}/ingest?orgId=1&refresh=30s",
        "postgres://{host}:5432/{db} is reachable only from the VPN (no password: IAM auth).",
        "redis://{host}:6379/0 is the local cache.",
        "Docs: https://docs.python.org/3/library/os.html#os.environ",
        "Sentry DSN https://{md5}@o{n}.ingest.sentry.io/{account} (public, embedded in the web app).",
        "The signup link is https://app.acme.io/invite?email=ana@acme.io&team=core",
        "s3://{bucket}/exports/{date}/part-0000.parquet",
        "Proxy at http://proxy.internal:3128 for the build containers.",
        "https://user@gitlab.acme.io/platform/api.git prompts for the password.",
        "Grafana: https://grafana.acme.io:8443/explore?left=%5B%22now-1h%22%5D",
        "amqp://{host}:5672/ is the broker (auth through the cluster's mTLS).",
        "The webhook target is https://hooks.acme.io/github/{uuid}.",
    ],
    "identifier": [
        "Stripe customer {stripe_obj} was charged twice; refund issued.",
        "ULID {ulid} is the first event of the broken batch.",
        "AWS account {account}, role arn:aws:iam::{account}:role/deploy-ci.",
        "Pod {svc}-{pod} was OOMKilled at 03:12.",
        "Slack channel C04{ulid} is #incident-{n}.",
        "The fixture is {b64text} (base64 of a plain sentence).",
        "Unix time {epoch} is when the cert expired.",
        "Cache is keyed by the sha256 {sha256} of the query.",
        "Port {port} is open only inside the VPC.",
        "The KMS key arn is arn:aws:kms:{region}:{account}:key/{uuid}.",
        "Secrets Manager ARN arn:aws:secretsmanager:{region}:{account}:secret:prod/db-AbCdEf",
        "The key id in the JWKS is {md5}, it rotates monthly.",
        "Vault path secret/data/{svc}/db holds the password, read it with vault kv get.",
        "Google OAuth client id {account}-{md5}.apps.googleusercontent.com (not secret).",
        "Stripe publishable keys start with pk_ and may ship to the browser; customer {stripe_obj}.",
    ],
}


# -- second round: written blind after the rule was tuned on the notes above, measured once
# (bench/RESULTS.md#secret-detection), then its misses were fixed; now part of the tuned set.

SECOND_POSITIVES: dict[str, list[str]] = {
    "aws-access-key": [
        "| env | key id |\n|-----|--------|\n| prod | {aws_id} |\n| staging | {aws_id~2} |",
        "Security hub finding: {aws_id} used from Tor exit node, key disabled by the lambda.",
        "access key {aws_id} belongs to the terraform-state user",
    ],
    "aws-secret-key": [
        "Creds for the analytics export (aws):\n  id: {aws_id}\n  secret: {aws_secret}",
        "{aws_id}:{aws_secret} is what the old s3fs mount in /etc/passwd-s3fs had.",
        "The pair that leaked in the Slack thread: {aws_id} {aws_secret}",
        "aws_secret_access_key={aws_secret}",
        "Rclone remote [s3]\ntype = s3\naccess_key_id = {aws_id}\nsecret_access_key = {aws_secret}",
        "For the Glue job use secret access key \"{aws_secret}\" with id {aws_id}.",
    ],
    "anthropic-key": [
        "claude code on the build agent reads ANTHROPIC_API_KEY; I set it to {anthropic} for now.",
        "headers = {{'x-api-key': '{anthropic}', 'anthropic-version': '2023-06-01'}}",
        "Key {anthropic} belongs to the eval workspace (limit 50 RPM).",
        "usage report script: admin key {anthropic_admin}",
    ],
    "openai-key": [
        "OPENAI_KEY: {openai_project}",
        "langchain picked up {openai_legacy} from the notebook env, not the project key.",
        "Azure is not involved, it is plain OpenAI with key {openai_service}",
        "llm --key {openai_project} 'summarise this diff'",
    ],
    "github-token": [
        "git push https://{gh}@github.com/{repo}.git main (the bot user has write access).",
        "Authorization: token {gh}",
        "The Terraform GitHub provider is configured with token = \"{gh_pat}\"",
        "[credential]\n  helper = store\n# ~/.git-credentials: https://bot:{gh}@github.com",
    ],
    "gitlab-token": [
        "The deploy token for the registry is {glpat}, docker login registry.acme.io -u deploy -p {glpat}",
        "gitlab-runner register --token {glpat}",
        "GITLAB_TOKEN={glpat} in the renovate config",
    ],
    "slack-token": [
        "Slack app creds: bot {xoxb}, user {xoxp}",
        "curl -X POST -H 'Content-type: application/json' --data '{{\"text\":\"hi\"}}' {slack_hook}",
        "slack_webhook_url: {slack_hook}",
        "token=xoxp is old style; ours is {xoxb} with chat:write.",
    ],
    "stripe-key": [
        "Stripe::api_key = '{sk_live}' in the Rails initializer (prod only).",
        "stripe listen --api-key {sk_test} --forward-to localhost:4242/webhook",
        "{rk_live} is the restricted key of the reporting job",
        "const stripe = require('stripe')('{sk_test}');",
    ],
    "google-service-account": [
        "SA JSON pasted by {who} for the backfill:\n{sa_json}",
        "credentials.json content (rotate after the migration): {sa_json}",
        "GCP_SA_KEY secret in GitHub is the file with \"private_key\": \"{sa_key}\"",
    ],
    "google-api-key": [
        "<script src=\"https://maps.googleapis.com/maps/api/js?key={google_api}&callback=initMap\"></script>",
        "firebaseConfig = {{ apiKey: \"{google_api}\", authDomain: \"acme-app.firebaseapp.com\" }}",
        "Gemini: genai.configure(api_key=\"{google_api}\")",
    ],
    "jwt": [
        "Cookie: session={jwt}; Path=/; HttpOnly",
        "The refresh token is a JWT too: {jwt}",
        "Pasting the token for the bug report: {jwt}",
        "wscat -c wss://rt.acme.io/socket -H 'Sec-WebSocket-Protocol: {jwt}'",
    ],
    "bearer-token": [
        "http GET api.acme.io/v1/me 'Authorization:Bearer {bearer}'",
        "requests.get(url, headers={{\"Authorization\": \"Bearer {bearer}\"}})",
        "The PagerDuty integration uses Bearer {bearer}",
    ],
    "private-key": [
        "values.yaml:\ntls:\n  key: |\n    {pem_ec}",
        "id_ed25519 of the deploy user: {pem_openssh}",
        "Rotated the SAML SP key, the old one was {pem_collapsed}",
        "Terraform output tls_private_key.ci.private_key_pem = <<EOT\n{pem_rsa}\nEOT",
        "-----BEGIN EC PRIVATE KEY----- inline in the Ansible vault? no, in plain text: {pem_ec}",
        "Encrypted signing key, passphrase {pw}:\n{pem_encrypted}",
    ],
    "connection-string": [
        "engine = create_engine('mysql+pymysql://etl:{url_pw}@{host}/{db}')",
        "MONGO_URI=mongodb://admin:{url_pw}@mongo-0.mongo:27017,mongo-1.mongo:27017/{db}?replicaSet=rs0&authSource=admin",
        "Sidekiq: REDIS_URL=redis://:{url_pw}@{host}:6379/2",
        "The DSN in the Airflow connection is postgresql://airflow:{raw_pw}@{host}:5432/airflow",
        "Host={host};Port=5432;Database={db};Username=app;Password={pw}",
        "ClickHouse: clickhouse://default:{url_pw}@{host}:9000/{db}",
        "amqp://guest:{url_pw}@{host}:5672// is the broker url in celeryconfig.py",
        "Server={host};Database={db};Uid=app;Pwd={pw};",
        "jdbc:sqlserver://{host}:1433;databaseName={db};user=svc;password={pw};encrypt=true",
    ],
    "env-assignment": [
        "ENV API_SECRET={token}",
        "heroku config:set SENDGRID_PASSWORD={pw} -a acme-prod",
        "DB_PASS={pw} ./run-migrations.sh",
        "{{\"password\": \"{pw}\", \"username\": \"svc_etl\"}}",
        "app.config['SECRET_KEY'] = '{hex}'",
        "TWILIO_AUTH_TOKEN={hex}",
        "cloudflare: CF_API_TOKEN={token}",
        "[database]\nuser = app\npassword = {pw}\nhost = {host}",
        "setx OPENWEATHER_API_KEY {hex}",
        "kafka sasl.jaas.config=... password=\"{pw}\";",
        "HF_TOKEN={token}",
        "DATADOG_API_KEY: {hex}",
    ],
}

SECOND_LOOKALIKES: dict[str, list[str]] = {
    "git-sha": [
        "Reverted {short_sha}..{short_sha~2}; the release branch is at {sha}.",
        "submodule vendor/ladybug -> {sha}",
        "CI run for {short_sha} took 14 min, most of it in the docker build.",
        "Tagged v2.3.1 at {sha} (signed).",
    ],
    "uuid": [
        "Correlation-Id: {uuid}",
        "Delete workspace {uuid} and {uuid~2} after the export.",
        "Grafana dashboard uid {uuid} is the on-call board.",
    ],
    "base64-image": [
        "![diagram](data:image/png;base64,{png})",
        "The Slack unfurl preview embeds data:image/jpeg;base64,{jpeg}",
    ],
    "integrity-hash": [
        "\"node_modules/react\": {{\"version\": \"18.3.1\", \"resolved\": \"https://registry.npmjs.org/react/-/react-18.3.1.tgz\", \"integrity\": \"{sri512}\"}}",
        "Nix: hash = \"{sri256}\";",
        "uv.lock: sdist = {{ url = \"https://files.pythonhosted.org/x.tar.gz\", hash = \"sha256:{sha256}\", size = 51200 }}",
        "Gemfile.lock CHECKSUMS rack (3.0.8) sha256={sha256}",
    ],
    "docker-digest": [
        "FROM node:20-alpine@sha256:{sha256} AS build",
        "crane digest ghcr.io/{repo}:latest -> sha256:{sha256}",
        "The helm chart pins image.digest: sha256:{sha256}",
    ],
    "content-hash": [
        "ETag: W/\"{md5}\"",
        "x-amz-content-sha256: {sha256}",
        "The snapshot file is named snap-{sha256}.bin",
        "git hash-object README.md -> {sha}",
    ],
    "placeholder": [
        "export AWS_ACCESS_KEY_ID=AKIAXXXXXXXXXXXXXXXX AWS_SECRET_ACCESS_KEY=xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        "Fill in ANTHROPIC_API_KEY=sk-ant-api03-... in .env (see .env.example).",
        "token: <GITLAB_TOKEN>",
        "password: \"********\"",
        "API_KEY=replace-me",
        "stripe_key: sk_live_XXXXXXXXXXXXXXXXXXXXXXXX (example only)",
        "Authorization: Bearer <token>",
        "Authorization: Bearer ${{ACCESS_TOKEN}}",
        "postgres://USER:PASSWORD@HOST:5432/DB",
        "SECRET_KEY={{{{ vault_secret_key }}}} in the Jinja template",
        "OPENAI_API_KEY=\"your-openai-key\"",
        "The .env.example lists DB_PASSWORD=, API_TOKEN= and SECRET_KEY= with empty values.",
    ],
    "version": [
        "Bumped @types/node to {semver} and typescript to {semver~2}.",
        "Kernel {semver}-generic on the runners, glibc 2.35.",
        "Release {semver} (build {short_sha}) is the last one with the token bucket limiter.",
    ],
    "colour": [
        "--color-danger: {colour}; --color-ok: {colour~2};",
        "The status badge is {colour} when the build passes.",
    ],
    "prose": [
        "The access token lifetime went from 1 hour to 15 minutes.",
        "Asked security whether the signing secret can be shared between regions; answer: no.",
        "Password complexity rules moved to the identity provider.",
        "API key auth is only for server-to-server calls; browsers use the session cookie.",
        "If the secret is rotated, restart the pods so they pick up the new mount.",
        "Our tokens are opaque, not JWTs, so the gateway has to introspect them.",
        "The keys of the cache are tenant-scoped; flushing one tenant is cheap.",
        "Password = whatever the user typed, we never store it in clear.",
        "The key insight: retries were hammering the auth service, not the DB.",
        "Secret rotation is tracked in JIRA SEC-{n}; owner {who}.",
        "Nobody should have the prod DB password on their laptop.",
        "The token bucket refills 10 tokens per second per client.",
    ],
    "code": [
        "token = jwt.encode(payload, settings.JWT_SECRET, algorithm=\"HS256\")",
        "password = request.form[\"password\"]",
        "secret = Secret(name=\"db\", namespace=ns)",
        "api_key: str = Field(default=None, repr=False)",
        "if (!apiKey) throw new Error('API key missing');",
        "variable \"db_password\" {{ sensitive = true }}",
        "env:\n  DB_PASSWORD:\n    valueFrom:\n      secretKeyRef:\n        name: db\n        key: password",
        "const { data: token } = await supabase.auth.getSession();",
        "tokens = tokenizer(text, truncation=True, max_length=512)",
        "ssh_key_path = Path.home() / \".ssh\" / \"id_ed25519\"",
        "token: process.env.NPM_TOKEN",
        "db_password = vault_client.read(\"secret/db\")[\"data\"][\"password\"]",
    ],
    "url": [
        "https://console.aws.amazon.com/iam/home#/users/ci-deployer?section=security_credentials",
        "The OAuth callback is https://app.acme.io/auth/callback?code=...&state=...",
        "mongodb://mongo-0.mongo:27017/{db}?replicaSet=rs0",
        "http://169.254.169.254/latest/meta-data/iam/security-credentials/ gives the instance role creds",
        "https://api.github.com/repos/{repo}/actions/secrets lists the secret names, not values.",
    ],
    "identifier": [
        "IAM role AROA{ulid} is the one assumed by the runner.",
        "The KMS alias alias/{svc}-secrets encrypts the SSM parameters.",
        "Stripe event evt_{ulid} was delivered three times.",
        "Device id {UUID} keeps re-registering.",
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{b64text} ci@acme (the public half, fine to share)",
    ],
}


# -- held out: written after all tuning, measured, never tuned on ---------------------------

HELDOUT_POSITIVES: dict[str, list[str]] = {
    "aws-access-key": [
        "IAM access analyzer flagged {aws_id} as unused for 180 days; deleting it.",
        "aws iam delete-access-key --user-name ci --access-key-id {aws_id}",
    ],
    "aws-secret-key": [
        "Pasted into the runbook by mistake: key={aws_id} secret={aws_secret}",
        "Vector sink s3: auth.access_key_id = \"{aws_id}\", auth.secret_access_key = \"{aws_secret}\"",
        "For MinIO-compatible tests use the aws creds {aws_id} and {aws_secret} (not prod).",
        "duplicity export: AWS_ACCESS_KEY_ID={aws_id}; AWS_SECRET_ACCESS_KEY={aws_secret}",
    ],
    "anthropic-key": [
        "Claude API key for the triage bot: {anthropic}",
        "ANTHROPIC_API_KEY: \"{anthropic}\" in the Helm secret values (base64 later).",
        "{anthropic} <- admin console said this one has no spend limit",
    ],
    "openai-key": [
        "Whisper transcription uses {openai_project}, the one with the higher rate tier.",
        "openai_api_key = \"{openai_legacy}\"",
        "set OPENAI_API_KEY={openai_service} in the scheduled task",
    ],
    "github-token": [
        "actions/checkout with token: {gh} because the default GITHUB_TOKEN cannot read the private submodule.",
        "brew tap failed until HOMEBREW_GITHUB_API_TOKEN={gh} was set.",
        "Copilot CLI stored {gh_pat} in ~/.config/gh/hosts.yml",
    ],
    "gitlab-token": [
        "Personal access token (expires in a month): {glpat}",
        "npm config set //gitlab.acme.io/api/v4/packages/npm/:_authToken {glpat}",
    ],
    "slack-token": [
        "Workflow builder webhook {slack_hook} posts to #deploys.",
        "Bot User OAuth Token: {xoxb}",
        "slack_sdk.WebClient(token=\"{xoxp}\")",
    ],
    "stripe-key": [
        "Secret key for the Connect platform account: {sk_live}",
        "Stripe CLI: stripe login printed {rk_live} as the restricted key.",
        "STRIPE_API_KEY: {sk_test}",
    ],
    "google-service-account": [
        "kubectl create secret generic gcs-key --from-literal=key.json='{sa_json}'",
        "The BigQuery loader's SA key: \"private_key\": \"{sa_key}\", client_email is loader@acme-prod.",
    ],
    "google-api-key": [
        "The Android app ships with {google_api} (restricted to the package name).",
        "Translate API: https://translation.googleapis.com/language/translate/v2?key={google_api}&q=hello&target=de",
    ],
    "jwt": [
        "localStorage.token was {jwt} when the bug happened.",
        "kubectl token for the dashboard: {jwt}",
        "grpcurl -H 'authorization: Bearer {jwt}' api.acme.io:443 list",
    ],
    "bearer-token": [
        "Auth header that works for the metrics API: Bearer {bearer}",
        "fetch(url, {{ headers: {{ Authorization: `Bearer {bearer}` }} }})",
    ],
    "private-key": [
        "Old code signing key (revoked, but still): {pem_rsa}",
        "authorized_keys is fine; the private half is:\n{pem_openssh}",
        "Put this in /etc/nginx/ssl/site.key: {pem_pkcs8}",
        "JWT signer PEM, newlines lost in Slack: {pem_collapsed}",
    ],
    "connection-string": [
        "Metabase points at postgres://metabase:{url_pw}@{host}:5432/metabase",
        "Prisma: DATABASE_URL=\"mysql://prisma:{url_pw}@{host}:3306/{db}\"",
        "mongosh 'mongodb+srv://ops:{raw_pw}@cluster1.ab3cd.mongodb.net/admin'",
        "BROKER_URL=amqp://svc:{url_pw}@{host}:5672/%2F",
        "The Rails database.yml has url: <%= ENV['DATABASE_URL'] %> but staging hardcodes postgres://rails:{url_pw}@{host}/{db}",
        "Data Source={host},1433;Initial Catalog={db};User ID=report;Password={pw};TrustServerCertificate=True",
        "redis-cli -u redis://default:{url_pw}@{host}:6379 ping",
    ],
    "env-assignment": [
        "PGPASSWORD={pw} psql -h {host} -U app {db}",
        "In .envrc: export SENTRY_DSN_SECRET={hex}",
        "NEXTAUTH_SECRET={token}",
        "smtp:\n  user: alerts@acme.io\n  password: {pw}",
        "config.json: {{\"apiToken\": \"{token}\", \"baseUrl\": \"https://api.acme.io\"}}",
        "ENV DB_PASSWORD {pw}",
        "CLOUDINARY_API_SECRET={token}",
        "the vault dev root token is {token} (dev server only)",
        "ELASTIC_PASSWORD={pw} docker compose up -d es01",
        "mail password is {pw}, same for staging",
    ],
}

HELDOUT_LOOKALIKES: dict[str, list[str]] = {
    "git-sha": [
        "Fixed by {sha} (squash of 4 commits).",
        "The bad merge is {short_sha}; `git show {short_sha} --stat` lists the lockfile only.",
        "Renovate PR bumps the digest from {sha} to {sha~2}.",
    ],
    "uuid": [
        "Job {uuid} stuck in PENDING since the node drained.",
        "X-Request-ID {UUID} in the nginx log matches the 502.",
    ],
    "base64-image": [
        "background-image: url('data:image/png;base64,{png}')",
    ],
    "integrity-hash": [
        "bun.lockb is binary, but package-lock has \"integrity\": \"{sri512}\"",
        "requirements.txt: numpy==2.1.0 --hash=sha256:{sha256}",
        "composer.lock \"shasum\": \"{sha}\"",
    ],
    "docker-digest": [
        "docker buildx imagetools inspect shows Digest: sha256:{sha256}",
        "image: registry.acme.io/{svc}@sha256:{sha256}",
    ],
    "content-hash": [
        "md5 of the uploaded CSV: {md5}",
        "SHA-256 fingerprint of the TLS cert: {sha256}",
        "The model file checksum {sha256} matches the release page.",
    ],
    "placeholder": [
        "GITHUB_TOKEN=ghp_your_token_here",
        "Use `export STRIPE_API_KEY=sk_test_...` locally.",
        "api_key: <YOUR KEY>",
        "password: '<password>'",
        "AWS_ACCESS_KEY_ID=AKIAIOSFODNN7XXXXXXX is how the docs redact it",
        "SLACK_BOT_TOKEN=xoxb-your-token",
        "DATABASE_URL=postgres://postgres:<password>@localhost:5432/dev",
        "OPENAI_API_KEY=sk-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        "token = \"TODO\"",
    ],
    "version": [
        "Postgres {semver} in prod, {semver~2} locally; the planner change explains the slow query.",
        "The SDK {semver} changelog mentions a token refresh fix.",
    ],
    "colour": [
        "Focus ring colour {colour}, hover {colour~2}.",
    ],
    "prose": [
        "The password for the staging DB is in 1Password under 'Staging Postgres'.",
        "Make sure the secret key is at least 32 bytes.",
        "Token refresh happens 5 minutes before expiry.",
        "API keys are hashed (sha256) before they are stored, so we cannot show them again.",
        "The token endpoint returns 400 when the client secret is wrong.",
        "We decided: no secrets in memory notes, only pointers to Vault paths.",
        "A password was leaked in the CI log on {date}; rotated within the hour.",
        "The key rotation job failed because the KMS key was pending deletion.",
        "Set the secret in the repo settings, not in the workflow file.",
        "password is required for the admin UI, SSO for everything else.",
    ],
    "code": [
        "api_key = config.get(\"api_key\")",
        "password = hashlib.sha256(raw.encode()).hexdigest()",
        "secret_name = f\"{{env}}/db/password\"",
        "const API_KEY = process.env.API_KEY ?? '';",
        "token_type = \"bearer\"",
        "client_secret: ${{OAUTH_CLIENT_SECRET}}",
        "if token.expired(): token = refresh(token)",
        "SECRET_KEY_FALLBACKS = [old_key]",
    ],
    "url": [
        "https://api.acme.io/v1/tokens/revoke is the endpoint to kill a leaked token.",
        "ftp://mirror.acme.io/pub/releases/",
        "https://{host}:8443/admin/login?next=/admin/users",
    ],
    "identifier": [
        "GCP project number {account}, project id acme-prod-391.",
        "Okta app client id 0oa{ulid}.",
        "The secret is named prod/{svc}/db in Secrets Manager (value not here).",
    ],
}


def notes(templates: dict[str, list[str]], positive: bool) -> list[dict]:
    rows, seen = [], set()
    for kind, texts in templates.items():
        for template in texts:
            for _ in range(INSTANCES):
                text, secrets = fill(template)
                if text in seen:
                    continue  # a template without random parts is written once
                seen.add(text)
                assert bool(secrets) == positive, (kind, template)
                assert all(s in text for s in secrets)
                row = {"kind": kind, "text": text}
                if positive:
                    row["secrets"] = secrets
                rows.append(row)
    return rows


def corpus() -> dict[str, list[dict]]:
    """Every file of the corpus: its name -> its notes."""
    rng.seed(SEED)
    positives = notes(POSITIVES, True)
    lookalikes = notes(LOOKALIKES, False)
    rng.seed(SECOND_SEED)
    positives += notes(SECOND_POSITIVES, True)
    lookalikes += notes(SECOND_LOOKALIKES, False)
    rng.seed(HELDOUT_SEED)
    return {"positives": positives, "lookalikes": lookalikes,
            "positives_heldout": notes(HELDOUT_POSITIVES, True),
            "lookalikes_heldout": notes(HELDOUT_LOOKALIKES, False)}


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for name, rows in corpus().items():
        path = OUT / f"{name}.jsonl"
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
        print(f"{path.relative_to(ROOT)}: {len(rows)} notes")


if __name__ == "__main__":
    main()
