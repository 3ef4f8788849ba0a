"""The one rule set for redaction, shared by the gateway (C) and this runtime (Python).

Data only: src/catalog/gen_redact_rules.py turns these lists into src's redact_rules.h at build time,
and codemcp_rt.redact applies them here, so the two can never drift apart. Both sides
implement the same three rules:

1. Keys. A key (JSON member, header name, ``name=`` in text) is secret when one of its words
   is in SECRET_WORDS, or two adjacent words are a SECRET_PAIRS entry. Words are split on
   non-alphanumerics and camelCase ("clientSecret" -> client, secret; "APIKey" -> api, key),
   so "author", "tokenizer", "keyboard" and "passwordless_mode" are not secrets. Under a
   secret key, strings, objects and arrays become "***"; numbers, booleans and null stay
   ("max_tokens": 100 is not a secret, and neither is "private": true).
2. Values. Any string, under any key and inside free text (log lines, error messages, URLs),
   is searched for VALUE_PATTERNS; a match is replaced by "***" (only its first group when
   the pattern has one, so "Bearer ***" keeps the scheme) unless it starts with a letter or
   digit right after another one ("task-..." does not hold "sk-...").
3. Text pairs. In free text, KEY_VALUE_PATTERN finds ``key=value`` / ``"key": "value"`` /
   ``key: value``; the value is replaced when the key is secret by rule 1 and the value is
   not a plain number or true/false/null, nor (after a bare ``:``, no ``=`` or quote) a short
   lowercase word: "needs_auth: the server answered 401" is a sentence.

Patterns are in the syntax of src/catalog/linear_re.h (the gateway's parser, shared with
policy rules) and mean the same in Python's ``re``: flat (byte classes and literals, each with
a count, no alternation), at most the groups described above, no ``\\d``/``\\w``/``\\s``
(Unicode in Python), no lazy or possessive quantifiers, no lookaround, no ``(?...)``.
"""

SECRET_WORDS = [
    "token", "secret", "secrets", "password", "passwords", "passwd", "passphrase", "pwd",
    "apikey", "apikeys", "auth", "authorization", "authentication", "credential",
    "credentials", "cookie", "cookies", "bearer", "privatekey", "signature", "jwt",
    "sessionkey", "sessionid", "secretkey", "accesskey", "clientsecret", "passcode",
]

SECRET_PAIRS = [
    ("api", "key"), ("private", "key"), ("access", "key"), ("secret", "key"),
    ("session", "id"), ("session", "key"), ("signing", "key"), ("github", "pat"),
    ("encryption", "key"), ("master", "key"), ("account", "key"),
]

VALUE_PATTERNS = [
    ("bearer", "[Bb][Ee][Aa][Rr][Ee][Rr] +([A-Za-z0-9._~+/=-]{16,})"),
    ("github", "gh[pousr]_[A-Za-z0-9]{20,}"),
    ("github_pat", "github_pat_[A-Za-z0-9_]{20,}"),
    ("gitlab", "glpat-[A-Za-z0-9_-]{20,}"),
    ("openai_anthropic", "sk-[A-Za-z0-9_-]{20,}"),
    ("stripe_live", "[rs]k_live_[A-Za-z0-9]{16,}"),
    ("stripe_test", "[rs]k_test_[A-Za-z0-9]{16,}"),
    ("slack", "xox[abposr]-[A-Za-z0-9-]{10,}"),
    ("aws_access_key", "A[KS]IA[0-9A-Z]{16}"),
    ("google_api_key", "AIza[0-9A-Za-z_-]{35}"),
    ("npm", "npm_[A-Za-z0-9]{36}"),
    ("huggingface", "hf_[A-Za-z0-9]{30,}"),
    ("jwt", "eyJ[A-Za-z0-9_-]{8,}[.]eyJ[A-Za-z0-9_-]{8,}[.][A-Za-z0-9_-]{8,}"),
    ("pem_private_key", "-----BEGIN[A-Z ]*PRIVATE KEY-----[^-]*"),
    ("url_password", "://[^/:@ \"']+:([^/@ \"']+)@"),
]

KEY_VALUE_PATTERN = "([A-Za-z][A-Za-z0-9_.-]*)\"?[ ]*[=:][ ]*\"?([^ \"&,;}'<>]+)"

REDACTED = "***"
