"""Unlabelled secrets: high-entropy tokens, prefixed tokens, webhook URLs.

A token with no label is judged by its shape alone: long, mixed-case and high in entropy, or a
short name, a separator and key material (``bkua_<hex>``, ``dt0c01.<random>``), or a webhook
URL that carries its own secret. What the text itself says a token is (a hash, an id, public key
material, an image) lets it pass.
"""

from __future__ import annotations

import re

from harness.memory.guard.base import GuardRule, entropy, looks_random

__all__ = ["TOKEN_RULES"]

# hex digits and "-" only (hashes, commit ids, UUIDs): one regex test, cheaper than a set's
_HEX = re.compile(r"[0-9a-fA-F\-]*")
_UPPER_OR_DIGIT = re.compile(r"[A-Z0-9]")

# --- unlabelled high-entropy tokens --------------------------------------------------------------

_TOKEN_PARTS = re.compile(r"[_\-.]")
_TOKEN = re.compile(r"(?<![A-Za-z0-9+/_\-=])[A-Za-z0-9+/_\-=]{20,}")


_HASH_CONTEXT = re.compile(
    r"(?:sha-?(?:1|224|256|384|512)|md5|blake2b?|xxh\d*|crc32)[:\-=]?\s*$"
    r"|\b(?:hash|checksum|digest|fingerprint|integrity|etag|commit|sha)\b[^\n]{0,30}$",
    re.IGNORECASE,
)


# base64 that is not a secret by what the text says it is: a data URI (an image), an SSH public
# key, the body of a PEM public key, certificate or signature
_DATA_URI = re.compile(r"data:[\w.+/-]+;base64,$", re.IGNORECASE)
_SSH_PUBLIC = re.compile(
    r"(?:ssh-(?:rsa|dss|ed25519)|ecdsa-sha2-nistp\d+|sk-(?:ssh-ed25519|ecdsa-sha2-nistp256)@openssh\.com)\s+$"
)
_PUBLIC_BLOCK = re.compile(
    r"-----BEGIN (?:RSA |EC |DSA |SSH2 |OPENSSH |PGP )?(?:PUBLIC KEY(?: BLOCK)?|CERTIFICATE(?: REQUEST)?"
    r"|NEW CERTIFICATE REQUEST|X509 CRL|TRUSTED CERTIFICATE|SIGNATURE|PGP SIGNATURE|MESSAGE)-----"
)


def _public_material(text: str, start: int) -> bool:
    """Whether the token at ``start`` is public key material the text labels as such. Pure."""
    before = text[max(0, start - 60) : start]
    if _DATA_URI.search(before) or _SSH_PUBLIC.search(before):
        return True
    begin = text.rfind("-----BEGIN", 0, start)
    return (
        begin >= 0
        and _PUBLIC_BLOCK.match(text, begin) is not None
        and "-----END" not in text[begin:start]
    )


# "the event id evt_1NG8...", "request id: req_...": the text says the token is an identifier
_ID_CONTEXT = re.compile(
    r"\b(?:ids?|identifier|event|object|request|trace|order|invoice|charge)\b[\s:=#]*(?:is\s+|was\s+)?$",
    re.IGNORECASE,
)


def _named_id(text: str, start: int) -> bool:
    return _ID_CONTEXT.search(text, max(0, start - 30), start) is not None


def _mixed_random(value: str, min_len: int = 32) -> bool:
    """Long, both cases, high entropy and not made of words: key material even without digits."""
    # cheapest tests first: most tokens fail on length or on case
    return (
        len(value) >= min_len
        and value.isascii()
        and _THREE_UPPER.search(value) is not None
        and _THREE_LOWER.search(value) is not None
        and looks_random(value, min_len=min_len, classes=2)
        and entropy(value) >= 4.3
    )


_THREE_UPPER = re.compile(r"[A-Z][^A-Z]*[A-Z][^A-Z]*[A-Z]")
_THREE_LOWER = re.compile(r"[a-z][^a-z]*[a-z][^a-z]*[a-z]")


def _random_token(m: re.Match[str]) -> bool:
    token = m.group().strip("=")
    if _HEX.fullmatch(token):
        return False  # hashes, commit ids, UUIDs, trace ids
    if token.count("/") >= 2 and not _UPPER_OR_DIGIT.search(token.replace("/", "")[:8]):
        return False  # a path
    # judge the longest run between separators: "sess_01HZX8..." is a prefix plus an id
    core = max(_TOKEN_PARTS.split(token), key=len)
    if not (
        (
            looks_random(core, min_len=20, classes=3)
            and (len(core) >= 24 or sum(c.isdigit() for c in core) >= 3)
        )
        # long mixed-case key material with few digits ("ATBBwuAdMsNb...") or a few
        # separators inside it ("00lL-miSzZ2wmGwc-..."), judged as a whole
        or (len(core) >= 32 and _mixed_random(core))
        or (len(token) >= 32 and len(core) < len(token) and looks_random(token, min_len=32))
    ):
        return False
    # a base64 digest or fingerprint the text itself calls a hash, an id, public key material
    return not (
        _HASH_CONTEXT.search(m.string, max(0, m.start() - 40), m.start())
        or _named_id(m.string, m.start())
        or _public_material(m.string, m.start())
    )


_ENTROPY_RULE = GuardRule(
    "high_entropy_token",
    "contains a random-looking token (likely a key)",
    _TOKEN,
    _random_token,
    tokens=True,
)

# --- a short prefix, a separator and key material (issue 31) --------------------------------
# Most vendors issue "<name>_<random>" tokens ("bkua_", "shippo_live_", "dt0c01.", "sk_"):
# the shape is the evidence, not the vendor's list. The random part may be hex (then 32+
# digits, as a hash would be, but after a name) or letters and digits of one case.
# (the lookahead keeps the many short "name_name" words from reaching the accept test)
# The search finds runs of key characters (one class: ~9x faster than the structure), and
# ``_prefixed_token`` reads the structure: a name, then separated parts. A Mailchimp key
# ("<32 hex>-us12") is read from the same run.
_PREFIXED = re.compile(r"(?<![A-Za-z0-9_\-.:+/=])[A-Za-z0-9_\-.:]{22,}")
_STRUCTURE = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[_\-.:][A-Za-z0-9]+)+")
_MAILCHIMP = re.compile(r"\b[0-9a-f]{32}-us\d{1,2}\b")
_PARTS = re.compile(r"[_\-.:]")
_RANDOM_HEX = re.compile(
    r"(?=(?:[^a-f]*[a-f]){4})(?=(?:\D*\d){4})[0-9a-f]{32,}|(?=(?:[^A-F]*[A-F]){4})(?=(?:\D*\d){4})[0-9A-F]{32,}"
)
# first parts that name a digest or an id, not a credential
_ID_PREFIXES = frozenset(
    str.split(
        "sha sha1 sha224 sha256 sha384 sha512 md5 blake2b blake3 xxh64 crc32 commit rev revision "
        "trace span req request build run job uuid ulid id pr issue ticket blob tree object etag "
        "hash digest checksum integrity sum v ver version release tag img image file doc"
        ""
    )
)


def _prefixed_token(m: re.Match[str]) -> bool:
    if _MAILCHIMP.search(m.group()):
        return True
    found = _STRUCTURE.match(m.group())
    if found is None or found.end() < 22:
        return False
    token = found.group()
    parts = _PARTS.split(token)
    if parts[0].lower() in _ID_PREFIXES:
        return False
    tail = token[len(parts[0]) + 1 :]
    # "y0_CRXw7mZ-C1Vc...": separators inside the random part too; judged as a whole
    if len(tail) >= 32 and looks_random(tail, min_len=32, classes=3):
        return not _named(m)
    for part in parts[1:]:
        if len(part) < 20:
            continue
        if (
            _RANDOM_HEX.fullmatch(part)
            or (
                len(part) >= 28  # a ULID ("sess_01HZX8...", 26 characters) is an id
                and sum(c.isdigit() for c in part) >= 4
                and (
                    looks_random(part, min_len=24, classes=2)
                    or (len(part) >= 32 and entropy(part) >= 4.0 and not part.isdigit())
                )
            )
            or _mixed_random(part, min_len=28)
        ):
            return not _named(m)
    return False


def _named(m: re.Match[str]) -> bool:
    """Whether the text calls the token at ``m`` a hash or an id. Pure."""
    text, start = m.string, m.start()
    return bool(_HASH_CONTEXT.search(text, max(0, start - 40), start) or _named_id(text, start))


_PREFIXED_RULE = GuardRule(
    "prefixed_token",
    "contains a prefixed random token (likely an API key)",
    _PREFIXED,
    _prefixed_token,
    tokens=True,
)

# a webhook URL carries its own secret: an id, then a long random path segment
_WEBHOOK_RULE = GuardRule(
    "webhook_url",
    "contains a webhook URL with its secret",
    re.compile(r"webhooks?(?:b2)?/[\w@.\-]{6,}/[A-Za-z0-9_\-]{30,}", re.IGNORECASE),
    anchors=("webhook/", "webhooks/", "webhookb2/"),
)


TOKEN_RULES: tuple[GuardRule, ...] = (_WEBHOOK_RULE, _ENTROPY_RULE, _PREFIXED_RULE)
