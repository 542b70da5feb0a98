"""Vendor token shapes: a published prefix plus a random-looking tail.

Token rules read long whitespace-free words only, and only those holding one of the known
prefixes (one shared trigger pattern), so the many shapes cost little on ordinary text.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from harness.memory.guard.base import GuardRule, is_path, looks_random

__all__ = ["VENDOR_RULES"]

_I = re.IGNORECASE

_SLUG = re.compile(r"(?:[A-Za-z]+|\d+)(?:[-_.](?:[A-Za-z]+|\d+))*")


def _tail(group: str, **kw: int) -> Callable[[re.Match[str]], bool]:
    def accept(m: re.Match[str]) -> bool:
        if m.groupdict().get("p"):
            return True  # a long, specific prefix ("sk-ant-api03-") is evidence enough
        tail = m.group(group)
        # the prefix is the evidence; the tail only has to be key material, not a slug made
        # of words and numbers like "sk-2024-11-29-backfill" or "sk-learn-pipeline"
        if _SLUG.fullmatch(tail):
            return False
        kinds = (
            any(c.isdigit() for c in tail)
            + any(c.isupper() for c in tail)
            + any(c.islower() for c in tail)
        )
        return kinds >= 2 or looks_random(tail, **kw)

    return accept


def _r(
    rule: str,
    reason: str,
    pattern: str,
    flags: int = 0,
    accept: Callable[[re.Match[str]], bool] | None = None,
    anchors: tuple[str, ...] = (),
    back_off: bool = False,
) -> GuardRule:
    # without anchors a vendor shape is looked for inside long whitespace-free words only,
    # and only in those that hold one of the known prefixes
    return GuardRule(
        rule,
        reason,
        re.compile(pattern, flags),
        accept,
        anchors=anchors,
        back_off=back_off,
        tokens=not anchors,
        trigger=None if anchors else _VENDOR_TRIGGER,
    )


# Grouped by first character: the regex engine tries the alternatives of a group only where that
# character occurs, which halves the cost of this test on every long word. Every alternative
# begins with a literal character, so a search skips, in C, to where one of them occurs; a
# Telegram token's "<digit>:AA" is therefore written from its ":" (the digit looked back at:
# a long word starts after white space, so the digit is inside the word, as before).
_VENDOR_TRIGGER = re.compile(
    r"A(?:KIA|SIA|BIA|CCA|GPA|IDA|ROA|NPA|IPA|Iza|TATT3|GE-SECRET|KCp|KID)|EAA|GOCSPX-|LTAI|NRAK-"
    r"|PMAK-|S(?:K[0-9a-fA-F]|G\.)|api_org_|d(?:ckr_pat_|api|o[opr]_v1_|p\.)|eyJ|f(?:igd_|o1_)"
    r"|g(?:h[pousr]_|ithub_pat_|l[a-z]{1,5}[-_]|sk_)|h(?:ooks\.slack|f_|v[sb]\.)|key-|l(?:in_|sv2_)"
    r"|n(?:pm_|fp_|tn_)|oy2|p(?:ypi-|ul-|csk_|scale_|plx-)|r(?:k_|ubygems_|8_|nd_)"
    r"|s(?:k[-_]|hp|bp_|ntry|ecret_|q0)|whsec_|x(?:ox|app-|ai-)|ya29\.|\.[A-Za-z0-9_\-]{6}\.|:(?<=\d:)AA"
)

# Published shapes. The tail check keeps branch names and slugs that share a prefix out.
VENDOR_RULES: tuple[GuardRule, ...] = (
    _r(
        "private_key",
        "contains a private key block",
        r"-----\s*BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?\s*-----|\bPuTTY-User-Key-File-\d",
        _I,
        anchors=("-----", "putty*"),
    ),
    _r(
        "aws_access_key",
        "contains an AWS access key id",
        r"\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|ANPA|AIPA)[0-9A-Z]{16}\b",
    ),
    _r(
        "github_token",
        "contains a GitHub token",
        r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})",
    ),
    _r(
        "gitlab_token",
        "contains a GitLab token",
        r"\bgl(?:pat|dt|rt|ptt|ft|cbt|imt|agent|oas|soat)-(?P<t>[A-Za-z0-9_\-]{20,})",
        0,
        _tail("t", classes=2),
    ),
    _r(
        "openai_key",
        "contains an OpenAI / Anthropic-style API key",
        r"\bsk-(?P<p>proj-|ant-(?:api|admin)\d\d-|svcacct-|admin-|None-)?(?P<t>[A-Za-z0-9_\-]{20,})",
        0,
        _tail("t", classes=2),
    ),
    _r(
        "slack_token",
        "contains a Slack token or webhook",
        r"\bxox(?:[abposre]|e\.xox[bp])-[A-Za-z0-9-]{10,}|\bxapp-\d-[A-Za-z0-9-]{10,}|hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9/]{20,}",
    ),
    _r(
        "stripe_key",
        "contains a Stripe key or webhook secret",
        r"\b(?:[sr]k_(?:live|test)_|whsec_)(?P<t>[A-Za-z0-9]{16,})",
        0,
        _tail("t", min_len=16, classes=2),
    ),
    _r(
        "google_api_key",
        "contains a Google API key or OAuth token",
        r"\bAIza[0-9A-Za-z_\-]{35}|\bya29\.[0-9A-Za-z_\-]{20,}|\bGOCSPX-[0-9A-Za-z_\-]{20,}",
    ),
    _r(
        "jwt",
        "contains a JSON Web Token",
        r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",
    ),
    _r(
        "package_registry_token",
        "contains a package registry token (npm, PyPI, RubyGems, NuGet, Docker Hub)",
        r"\bnpm_[A-Za-z0-9]{36}\b|\bpypi-AgE[A-Za-z0-9_\-]{50,}|\brubygems_[a-f0-9]{48}\b|\boy2[a-z0-9]{43}\b|\bdckr_pat_[A-Za-z0-9_\-]{20,}",
    ),
    _r(
        "huggingface_token",
        "contains a Hugging Face token",
        r"\bhf_[A-Za-z]{30,}\b|\bapi_org_[A-Za-z]{30,}\b",
    ),
    _r(
        "saas_token",
        "contains a SaaS API token (Shopify, Databricks, DigitalOcean, Linear, Postman, Grafana, ...)",
        r"\b(?:shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}|dapi[a-f0-9]{32}(?:-\d)?|do[opr]_v1_[a-f0-9]{64}"
        r"|lin_(?:api|oauth)_[A-Za-z0-9]{32,}|PMAK-[a-f0-9]{24}-[a-f0-9]{34}|gl(?:sa|c)_[A-Za-z0-9_+/=]{32,}"
        r"|NRAK-[A-Z0-9]{27}|ATATT3[A-Za-z0-9_\-=]{40,}|pul-[a-f0-9]{40}|sbp_[a-f0-9]{40}"
        r"|gsk_[A-Za-z0-9]{48,}|r8_[A-Za-z0-9]{37}|sntry[us]_[A-Za-z0-9_=+/]{40,}|pcsk_[A-Za-z0-9_]{40,}"
        r"|lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}|figd_[A-Za-z0-9_\-]{40}|pscale_(?:pw|tkn|oauth)_[A-Za-z0-9_\-.]{32,}"
        r"|nfp_[A-Za-z0-9]{36}|rnd_[A-Za-z0-9]{32}|fo1_[A-Za-z0-9_\-]{43}|xai-[A-Za-z0-9]{60,}|pplx-[A-Za-z0-9]{40,}"
        r"|ntn_[A-Za-z0-9]{40,}|secret_[A-Za-z0-9]{43}|hvs\.[A-Za-z0-9_\-]{24,}|hvb\.[A-Za-z0-9_\-]{24,}"
        r"|dp\.(?:st|ct|sa|scim|audit)\.[A-Za-z0-9_\-]{40,}|AGE-SECRET-KEY-1[A-Z0-9]{58}|sq0(?:atp|csp)-[A-Za-z0-9_\-]{22,}"
        r"|EAAA[A-Za-z0-9_\-]{60}|EAACEdEose0cBA[A-Za-z0-9]+|AKCp[A-Za-z0-9]{69}|LTAI[A-Za-z0-9]{12,20}|AKID[A-Za-z0-9]{32})",
    ),
    _r(
        "messaging_token",
        "contains a Twilio, Mailgun, SendGrid, Discord or Telegram credential",
        r"\b(?:SK[0-9a-fA-F]{32}|key-[0-9a-zA-Z]{32}|SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}"
        r"|[MNO][A-Za-z0-9_\-]{23,25}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,38}|\d{8,10}:AA[A-Za-z0-9_\-]{33})\b",
    ),
    _r(
        "cli_password",
        "passes a password on a command line",
        r"\b(?:mysql\w*|mariadb\w*|sshpass)\b[^\n|;&]{0,80}?\s-p(?:\s+(?=\S*[0-9!@#$%^&*])|(?=\S))(?P<t>[^\s\-$<{][^\s]{3,})",
        0,
        None,
        anchors=("mysql*", "mariadb*", "sshpass"),
    ),
    _r(
        "connection_string_key",
        "contains a connection string with an account key or password",
        r"(?:AccountKey|SharedAccessKey|Password|Pwd)=(?P<t>[^;\s\"']{8,})",
        _I,
        lambda m: not m.group("t").startswith(("$", "{", "<", "%")) and not is_path(m.group("t")),
        anchors=("key=", "password=", "pwd="),
        back_off=True,
    ),
    _r(
        "url_credentials",
        "contains a URL with embedded credentials",
        r"\b[a-z][a-z0-9+.\-]{1,20}://(?:[^\s/:@]*):(?P<t>[^\s/@]{3,})@[^\s/@]+",
        _I,
        lambda m: (
            not m.group("t").startswith(("$", "{", "<", "%", "*"))
            and m.group("t").lower()
            not in {"password", "pass", "pwd", "secret", "token", "xxx", "xxxx", "redacted"}
        ),
        anchors=("://",),
        back_off=True,
    ),
    _r(
        "bearer_token",
        "contains a bearer or basic credential",
        r"\b(?:bearer|basic|token)\s+(?P<t>[A-Za-z0-9_\-.=~+/]{20,})",
        _I,
        _tail("t", classes=2),
        # not "token": "token <value>" is the labelled rule's (the RuleSet gave this anchor
        # to that rule's stem "token*" until issue 31; the cost of asking twice buys nothing)
        anchors=("bearer", "basic"),
    ),
)
