"""Secret detectors: vendor token shapes, labelled values, and unlabelled high-entropy tokens.

Three kinds of evidence, each general rather than example-bound:

* a vendor's published token shape (prefix plus a random-looking tail);
* a label that names a credential (``password``, ``api_key``, ``Passwort``, ``비밀번호`` ...;
  quoted or not, as a JSON/YAML/TOML/.env key, a CLI flag or prose) followed by a value that
  looks like a credential rather than prose;
* a long token mixing upper case, lower case and digits with high entropy, that is neither a
  hash, a UUID, a path nor an identifier made of words.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from tests.support.guard_before31.base import GuardRule, looks_random
from tests.support.guard_before31.variants import by_first_letters, first_letter_guard
from tests.support.guard_before31.vendors import VENDOR_RULES

__all__ = ["SECRET_RULES", "looks_random"]

_I = re.IGNORECASE
# hex digits and "-" only (hashes, commit ids, UUIDs): one regex test, cheaper than a set's
_HEX = re.compile(r"[0-9a-fA-F\-]*")
_SYMBOLS = frozenset("!@#$%^&*()+=[]{}|\\:;'\"<>?,~`")


# --- labelled values ---------------------------------------------------------------------------


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# The label alternatives, in the order the pattern tries them. Each begins with a literal head,
# so a start's first two letters tell which of them can match there (see ``variants``).
_STRONG = (
    r"pass(?:word|wd|wort|phrase|code)?", "pwd", "pw", "secret", "kennwort", "mot de passe", "mdp",
    r"contrase[ñn]a", "senha", "clave", "pin", "비밀번호", "암호", "패스워드", "비번", "パスワード",
    "暗証番号", "密码", "口令", "密碼", "mật khẩu", "пароль",
)  # fmt: skip
_WEAK = (
    *(
        rf"{word}[_\-. ]?key"
        for word in str.split(  # in this order: the pattern tries them so
            "api access secret private signing encryption master account app client auth service "
            "license deploy"
        )
    ),
    "apikey", "token", "auth", "login", "credentials?", r"api[- ]?schl[üu]ssel",
    r"geheimer schl[üu]ssel", r"schl[üu]ssel", "zugangsdaten", r"cl[ée](?: api| secr[èe]te| d'api)?",
    r"jeton(?: d'acc[èe]s)?", "identifiants", r"clave (?:api|secreta|de api)",
    r"token de ac(?:ceso|esso)", r"chave(?: de api| secreta)?", "api ?키", "키", "토큰", "시크릿",
    "api ?キー", "キー", "トークン", "アクセストークン", "秘密鍵", "シークレット", "api ?密钥", "密钥", "秘钥",
    "令牌", "访问令牌",
)  # fmt: skip
_SUFFIXES = r"(?:key|base|value|token|secret|plain|plaintext|b64|hex|raw|str|string|\d)"
_SUFFIX = rf"(?:[_\-]?{first_letter_guard(_SUFFIXES)}{_SUFFIXES})?"
_COPULA = r"=>|:=|->|==|:|=|：|(?:is|was|lautet|ist|war|est|es|era|é|sera|là)(?![^\W\d_])|는|은|は|是|为|為"
# tried after every word of the "between" part: one character test before the alternatives
_SEP_GUARD = first_letter_guard(_COPULA)


def _labelled(strong: Iterable[str], weak: Iterable[str]) -> str:
    """The labelled-value pattern over the given label alternatives ("(?!)": none)."""
    return (
        rf"(?P<label>(?P<strong>{'|'.join(strong) or '(?!)'})|(?P<weak>{'|'.join(weak) or '(?!)'}))"
        rf"{_SUFFIX}(?P<close>['\"\]]?)"
        rf"(?:(?P<between>(?:\s+[^\s:=.;!?]{{1,12}}){{0,4}}?)\s*{_SEP_GUARD}(?P<sep>{_COPULA})(?:\s*[:：])?|(?P<space>\s))"
        rf"\s*(?P<quote>['\"`「『“‘«]?)(?P<value>[!-~]+|[^\s'\"`,;，。、」』”’»]*[0-9!-/:-@][^\s'\"`,;，。、」』”’»]*(?=\s*$|[\n.,;，。」』”’»]))"
    )


_LABELLED = re.compile(_labelled(_STRONG, _WEAK), _I)


def _label_variants() -> tuple[tuple[str, str], ...]:
    # narrowing keeps each label in its own group (strong or weak), in its place
    def build(labels: list[str]) -> str:
        kept = set(labels)
        return _labelled([a for a in _STRONG if a in kept], [a for a in _WEAK if a in kept])

    assert not set(_STRONG) & set(_WEAK)
    return by_first_letters((*_STRONG, *_WEAK), build)


_PLACEHOLDER_SOURCE = (
    r"^(?:[$%{<(\[]|\*{3,}|x{3,}$|\.{3})|^(?:none|null|nil|true|false|undefined|empty|unset|redacted|"
    r"masked|hidden|secret|password|pass|pwd|changeme_later|example|placeholder|todo|tbd|n/?a)$|your[_\-]|"
    r"environ|getenv|process\.env|vault:|op://|secretsmanager|ssm:|\${|{{|\(\)"
)
_PLACEHOLDER = re.compile(_PLACEHOLDER_SOURCE, _I)
# On ASCII text, ignoring case is matching the lower-cased text: then the engine can skip ahead
# on the literals, which it cannot do ignoring case (about twice as fast on a short value).
_PLACEHOLDER_LOWER = re.compile(_PLACEHOLDER_SOURCE)


def _placeholder(value: str) -> bool:
    """Whether ``value`` reads like a placeholder or a reference rather than a secret. Pure."""
    if value.isascii():
        return _PLACEHOLDER_LOWER.search(value.lower()) is not None
    return _PLACEHOLDER.search(value) is not None


# Words that follow "password is / token:" in prose rather than a credential (en, de, fr, es, pt).
_PROSE = _words(
    """a an the not no never only also in on at from for to of with by via now still being kept
    set see use uses used and or but if when must should will can may need needs required optional
    stored saved encrypted hashed rotated expired invalid wrong incorrect correct valid missing empty
    blank long short weak strong secure insecure changed reset needed mandatory managed shared
    hidden masked redacted known unknown different same generated random unique too very length
    policy rotation expiry limit count budget field column header value string type format file
    provided configured available disabled enabled revoked leaked compromised attached included
    ignored checked verified case sensitive here there below above this that it its our your their
    my his her we you they them is are was be been per every each any all some one two three four
    five six seven eight nine ten manager vault prompt reset-link forgotten protected
    geheim erforderlich falsch richtig korrekt abgelaufen ungültig gültig leer nicht muss wird
    obligatoire requis incorrect expiré valide vide doit est pas
    requerida obligatoria incorrecta válida expirada debe
    obrigatória inválida correta deve
    expires rotates changes"""
)


_CAMEL = re.compile(r"[a-z][A-Z]")
_CODE_SEPS = frozenset({":", "=", "=>", ":=", "：", "=="})
# labels that name a user and a password together ("credentials: admin / pw"), by their start
_USER_LABELS = ("credential", "login", "zugangsdaten", "identifiants")
_UPPER_OR_DIGIT = re.compile(r"[A-Z0-9]")


def _code_like(m: re.Match[str]) -> bool:
    """Whether the label is written as a config key or flag (``DB_PASSWORD``, ``"apiKey"``, ``--pass``)."""
    text = m.string
    start = m.start("label")
    while start and (text[start - 1].isalnum() or text[start - 1] in "_.-"):
        start -= 1
    name = text[start : m.end("label")]
    before = text[start - 1] if start else ""
    return (
        bool(m.group("close"))
        or (before != "" and before in "\"'`")
        or name.startswith("-")
        or "_" in name
        or "." in name
        or (name.isupper() and len(name) > 3)
        or _CAMEL.search(name) is not None
    )


def _value_of(m: re.Match[str]) -> tuple[str, str, str, bool]:
    """(value without its closing quote or trailing punctuation, quote, separator, strong)."""
    value, quote, sep, strong = m.group("value", "quote", "sep", "strong")
    if quote and quote in value:
        value = value[: value.index(quote)]
    value = value.rstrip(".,;:)]}>!?'\"`") if not quote else value
    return value, quote, (sep or "").strip(), strong is not None


def _surely_refused(m: re.Match[str]) -> bool:
    """What :func:`_labelled_secret` refuses whatever the case of the letters (the common cases,
    decided before the costlier tests). Pure."""
    value, quote, sep, strong = _value_of(m)
    spaced = not sep
    # "key rotation", "password in" (spaced: no path accepts a shorter value)
    if spaced and (len(value) < 6 or ((quote or not strong) and len(value) < 16)):
        return True
    # "token is missing": a weak label needs 12 characters unless written as code or a login
    if (
        not strong
        and len(value) < 12
        and sep not in _CODE_SEPS
        and not m.group("label").lower().startswith(_USER_LABELS)
    ):
        return True
    return not value or _placeholder(value)


def _labelled_secret(m: re.Match[str]) -> bool:
    start = m.start("label")
    text = m.string
    # "compass: north" is not a password: the label must start a word (or a camelCase part)
    if start and text[start - 1].isalpha() and text[start].islower() and text[start - 1].islower():
        return False
    if _surely_refused(m):
        return False
    value, quote, sep, strong = _value_of(m)
    spaced = not sep
    if len(set(value)) == 1:
        return False
    between = m.group("between")
    if spaced and (quote or not strong):
        spaced_ok = looks_random(value, min_len=16, classes=2)
        return spaced_ok
    if between and sep in {":", "=", "："}:
        between = ""  # "password for prod: x" reads like a label all the same
    label = m.group("label").lower()
    if sep in _CODE_SEPS and _code_like(m):
        return len(value) >= 3 and value.lower() not in _PROSE
    if not strong and label.startswith(_USER_LABELS):
        # "credentials: admin / hunter2" or "login: root/toor1" names a user, then the password
        pair = re.match(r"\s*[/:]\s*(\S{4,})", text[m.end("value") :]) or re.fullmatch(
            r"[A-Za-z0-9_@-][A-Za-z0-9_.@-]+[/:]([^/\s]{4,})", value
        )
        if pair and not _placeholder(pair.group(1)):
            return True
    if not strong:
        # a labelled hex or UUID value is a token (Heroku and many others issue UUID keys)
        if len(value) >= 16 and _HEX.fullmatch(value) and not value.isdigit():
            return True
        return looks_random(value, min_len=12, classes=2) or (
            bool(quote) and len(value) >= 16 and len(set(value)) >= 8
        )
    letters_only = value.replace("-", "").replace("_", "").isalpha()
    if label == "pin":
        return value.isdigit() and len(value) >= 4 and sep in {":", "=", "：", "is"}
    if value.isdigit():
        return len(value) >= 4 and not between and not spaced
    if spaced and label.startswith("secret"):
        return False  # "kubectl get secret app-creds", "secret manager": a noun, not a label
    if spaced or between:
        return len(value) >= 6 and not letters_only and _mixed(value) >= 1
    if quote:
        return len(value) >= 3
    if value.lower() in _PROSE or len(value) < 4:
        return False
    if letters_only:
        tail = text[m.end("value") : m.end("value") + 40]
        ends_clause = re.match(r"\s*(?:$|[.,;!)\n]|\S+[.!]?\s*$|\(|—|-\s)", tail) is not None
        prose_form = re.search(
            r"(?:ed|ing|ly|ment|tion|able|ible|ung|ment|ción|ção)$", value.lower()
        )
        return ends_clause and not prose_form
    return len(value) >= 6 or _mixed(value) >= 1


def _mixed(value: str) -> int:
    """How many of digits, symbols and mixed case ``value`` shows (0-3)."""
    return (
        any(c.isdigit() for c in value)
        + any(c in _SYMBOLS for c in value)
        + (value != value.lower() and value != value.upper())
    )


_LABEL_RULE = GuardRule(
    "password_assignment",
    "assigns a password or secret value",
    _LABELLED,
    _labelled_secret,
    anchors=(
        *(
            f"{stem}*"
            for stem in [
                "pass",
                "pw",
                "secret",
                "kennwort",
                "mdp",
                "contrase",
                "senha",
                "clave",
                "key",
                "token",
                "auth",
                "login",
                "cred",
                "schl",
                "zugangsdaten",
                "clé",
                "cle",
                "jeton",
                "identifiants",
                "chave",
            ]
        ),
        "pin",
        *[
            "비밀번호",
            "암호",
            "패스워드",
            "비번",
            "パスワード",
            "暗証番号",
            "密码",
            "口令",
            "密碼",
            "mật",
            "пароль",
            "키",
            "토큰",
            "시크릿",
            "キー",
            "トークン",
            "秘密鍵",
            "シークレット",
            "密钥",
            "秘钥",
            "令牌",
        ],
    ),
    back_off=True,
    variants=_label_variants(),
    refuses_lowered=_surely_refused,
    starts=tuple(
        _words(
            "pass pwd pw secret kennwort mot mdp contrase senha clave pin api access private signing "
            "encryption master account app client auth service license deploy token credential login "
            "schl "
            "geheimer zugangsdaten clé cle jeton identifiants chave 비밀번호 암호 패스워드 비번 パスワード "
            "暗証番号 密码 口令 密碼 mật пароль 키 토큰 시크릿 キー トークン アクセストークン 秘密鍵 シークレット 密钥 "
            "秘钥 令牌 访问令牌"
        )
    ),
)

# --- unlabelled high-entropy tokens --------------------------------------------------------------

_TOKEN_PARTS = re.compile(r"[_\-.]")
_TOKEN = re.compile(r"(?<![A-Za-z0-9+/_\-=])[A-Za-z0-9+/_\-=]{20,}")


_HASH_CONTEXT = re.compile(
    r"(?:sha-?(?:1|224|256|384|512)|md5|blake2b?|xxh\d*|crc32)[:\-=]?\s*$"
    r"|\b(?:hash|checksum|digest|fingerprint|integrity|etag|commit|sha)\b[^\n]{0,30}$",
    re.IGNORECASE,
)


def _random_token(m: re.Match[str]) -> bool:
    token = m.group().strip("=")
    if _HEX.fullmatch(token):
        return False  # hashes, commit ids, UUIDs, trace ids
    if token.count("/") >= 2 and not _UPPER_OR_DIGIT.search(token.replace("/", "")[:8]):
        return False  # a path
    # judge the longest run between separators: "sess_01HZX8..." is a prefix plus an id
    core = max(_TOKEN_PARTS.split(token), key=len)
    if not (
        looks_random(core, min_len=20, classes=3)
        and (len(core) >= 24 or sum(c.isdigit() for c in core) >= 3)
    ):
        return False
    # a base64 digest or fingerprint the text itself calls a hash
    return not _HASH_CONTEXT.search(m.string, max(0, m.start() - 40), m.start())


_ENTROPY_RULE = GuardRule(
    "high_entropy_token",
    "contains a random-looking token (likely a key)",
    _TOKEN,
    _random_token,
    tokens=True,
)

SECRET_RULES: tuple[GuardRule, ...] = (*VENDOR_RULES, _LABEL_RULE, _ENTROPY_RULE)
