"""Prompt-injection detectors: instruction overrides, role takeovers, fake headers, exfiltration.

Each English rule pairs a phrase with a short context check, so that an instruction aimed at the
reader ("Ignore all previous instructions") is refused while a statement about a thing ("we
ignore previous test results", "the guard refuses 'ignore previous instructions'") is kept. The
other languages (de, fr, es, pt, it, ru, ko, ja, zh) use co-occurrence of an override verb, a
"previous/above" word and an "instructions/rules" noun within a short window.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from harness.memory.guard.base import GuardRule
from harness.memory.guard.variants import (
    by_first_letters,
    first_letter_guard,
    guard_lazy_alternations,
    split_alternatives,
)

__all__ = ["INJECTION_RULES", "MENTIONED", "aimed_at_reader", "injection_rule"]

_I = re.IGNORECASE


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Words that may precede an imperative in its clause without making it a statement.
_LEAD = _words(
    """please kindly now just simply so then and also first next finally important note ok okay
    hey hi hello assistant chatgpt claude gpt llm urgent attention warning you
    must should will need to have can shall i want need from on onward onwards always
    immediately instead but actually seriously really hereby"""
)
_CLAUSE = re.compile(r"[.!?;:\n\"“”()\[\]{}|>—,]")
_MENTION = re.compile(
    r"(?:like|such as|phrases?|strings?|called|e\.g\.|text|pattern|attacks?|"
    r"reject|refuse|detect|catch|block|flag|contains?|about|mean|means)[\s,]*$",
    _I,
)


def aimed_at_reader(text: str, start: int) -> bool:
    """True when the phrase at ``start`` opens its clause as an order to the reader.

    Only lead-in words ("please", "you must", "from now on", ...) may stand between the clause
    start and the phrase; a quoted phrase introduced as an example is a mention, not an order.
    """
    head = text[max(0, start - 80) : start]
    cut = max((m.end() for m in _CLAUSE.finditer(head)), default=0)
    if cut and head[cut - 1] in "\"“'(" and _MENTION.search(head[: cut - 1]):
        return False
    if start >= 1 and text[start - 1] in "'‘" and _MENTION.search(head[:-1]):
        return False
    words = re.findall(r"[\w']+", head[cut:].lower())
    return all(w in _LEAD for w in words)


# what introduces a token as talked about rather than used ("templates like <|im_start|>")
MENTIONED = re.compile(
    r"(?:like|such\s+as|e\.g\.|tokens?|tags?|strings?|uses?|emits?|emitted|returned|returns|"
    r"paste[sd]?|called|markers?|templates?|printed|outputs?|produced|sent)\W{0,3}$",
    _I,
)


def _fake_header(m: re.Match[str]) -> bool:
    if (m.group("rest3") is not None or m.group("rest4") is not None) and MENTIONED.search(
        m.string, max(0, m.start() - 40), m.start()
    ):
        return False
    if m.group("rest") is not None:
        # "System: ..." only counts at the start of a line or sentence
        # the character before the header, skipping " \t#*>" (without copying the text)
        text, k = m.string, m.start()
        while k and text[k - 1] in " \t#*>":
            k -= 1
        if k and text[k - 1] not in '.:;!?"“\n':
            return False
    return _ORDER_CUE.search("".join(g for g in m.groups() if g)) is not None


def _r(
    rule: str,
    reason: str,
    pattern: str,
    accept: Callable[[re.Match[str]], bool] | None = None,
    anchors: str = "",
    narrow: str = "",
) -> GuardRule:
    pattern = guard_lazy_alternations(pattern)
    return GuardRule(
        rule,
        reason,
        re.compile(pattern, _I | re.MULTILINE),
        accept,
        secret=False,
        variants=_narrowed(pattern, narrow) if narrow else (),
        # "+" joins the words of a two-word anchor ("set+aside"): common words alone ("set",
        # "do", "no") would send the pattern to every occurrence
        anchors=tuple(a.replace("+", " ") for a in anchors.split()),
    )


def injection_rule(
    rule: str,
    reason: str,
    pattern: str,
    accept: Callable[[re.Match[str]], bool] | None = None,
    anchors: str = "",
) -> GuardRule:
    """An injection rule as this module writes them (case-ignoring, multi-line; ``anchors``
    space-separated, ``+`` joining the words of one anchor). Pure."""
    return _r(rule, reason, pattern, accept, anchors)


def _narrowed(pattern: str, lead: str) -> tuple[tuple[str, str], ...]:
    """Variants of ``pattern`` for each start (see ``GuardRule.variants``).

    ``lead`` is ``"|"`` to narrow the top-level alternatives of ``pattern``, or a group
    ``(?:a|b|...)`` with which every alternative of ``pattern`` begins: that group is narrowed.
    """
    if lead == "|":
        assert "(?P<" not in pattern  # every named group must stay in every variant
        return by_first_letters(split_alternatives(pattern), "|".join)
    assert lead.startswith("(?:") and lead.endswith(")")
    # narrowing ``lead`` is only sound where every match begins with it
    assert all(a.removeprefix("\\b").startswith(lead) for a in split_alternatives(pattern))
    return by_first_letters(
        split_alternatives(lead[3:-1]),
        lambda alts: pattern.replace(lead, "(?:" + "|".join(alts) + ")"),
    )


# "Without telling anyone, she fixed the test": a subject after the clause tells a story
_NARRATED = re.compile(
    r"[^.!?\n]{0,40}?,\s*(?:she|he|they|we|i|someone|somebody|nobody|the\s+\w+|our\s+\w+|my\s+\w+)\s",
    _I,
)


def _not_narrated(m: re.Match[str]) -> bool:
    if m.group()[:7].lower() != "without":
        return True
    return _NARRATED.match(m.string, m.end()) is None


_VERB = (
    r"(?:ignore|disregard|forget(?:\s+about)?|override|bypass|skip|discard|drop|abandon|erase|wipe|"
    r"neglect|set\s+aside|throw\s+out|pay\s+no\s+(?:attention|heed|mind)\s+to|do\s+not\s+(?:follow|obey|heed)|"
    r"don'?t\s+(?:follow|obey|heed)|stop\s+(?:following|obeying)|no\s+longer\s+(?:follow|obey))"
)
_FILLER = (
    r"(?:all|any|each|every|of|the|your|my|these|those|our|its|whatever|that|which|was|were|"
    r"you|have|been|had|given|told|received|so|far|other|rules|and|instructions|also|entire|whole)"
)
_FILL = rf"(?:\s+{first_letter_guard(_FILLER)}{_FILLER}){{0,6}}"
_WHEN = (
    r"(?:previous(?:ly)?|prior|above|earlier|preceding|former|original|initial|old|existing|foregoing|"
    r"aforementioned|system|developer(?:'s)?|safety|default|current|given|built-in|hidden)"
)
_OBJ = (
    r"(?:instructions?|guidance|guidelines?|rules?|directives?|directions?|prompts?|commands?|orders?|constraints?|"
    r"restrictions?|polic(?:y|ies)|programming|training|settings|messages?|context|conversation|inputs?|"
    r"configuration|system\s+prompt|content\s+polic(?:y|ies))"
)
_STRONG_OBJ = (
    r"(?:instructions|directives|directions|guidelines|guidance|programming|training|conditioning|"
    r"alignment|system\s+prompt|rules|restrictions|"
    r"safety\s+\w+|content\s+polic(?:y|ies))"
)
_WHEN_OR_STRONG_GUARD = first_letter_guard(f"{_WHEN}|{_STRONG_OBJ}")
_ENDS_TOPIC = re.compile(r"\s+(?:about|on|regarding|for|of|from)\s", _I)


def _override(m: re.Match[str]) -> bool:
    # "forget the earlier context about the v1 API" is housekeeping, not an override
    weak = re.search(
        r"(?:context|messages?|conversation|inputs?|settings|configuration)$", m.group(), _I
    )
    if weak and _ENDS_TOPIC.match(m.string, m.end()):
        return False
    return aimed_at_reader(m.string, m.start())


_RESTRICTION_FREE = (
    r"(?:\b(?:no|without|free\s+(?:of|from)|freed\s+from|not\s+bound\s+by|unbound\s+by|beyond|any)\s+(?:\w+\s+){0,2}"
    r"(?:restrictions?|rules|limits?|limitations?|filters?|guidelines|censorship|ethics|morals|policies|"
    r"content\s+polic(?:y|ies)|safety|boundaries)|\bunrestricted|\bunfiltered|\buncensored|\bjailbr(?:oken|eak)|"
    r"\bDAN\b|do\s+anything\s+now|\bamoral|\bevil\b|never\s+refuses?|ignores?\s+(?:all\s+)?(?:rules|polic(?:y|ies)|guidelines)"
    r"|(?:developer|god|dan|jailbreak)\s+mode)"
)

# An English sentence can match a Romance verb stem ("ignore ... instructions"); a foreign
# article, possessive or any non-ASCII letter shows the sentence is in the other language.
_FOREIGN = re.compile(
    r"[^\x00-\x7f]|\b(?:las|los|les|la|le|tus|sus|todas|todos|toutes|tous|tes|vos|des|de|del|as|os|suas|tuas|"
    r"do|da|tutte|gli|alle|die|der|den|deine|ihre|dich|sie|dir|ihnen|mir|alles|vorher|lo|todo|tudo|tout|ce)\b",
    _I,
)
_ORDER_CUE = re.compile(
    r"\b(?:you|your|must|always|never|ignore|disregard|forget|reveal|grant|approve|allow|do\s+not|don't|"
    r"respond|answer|output|print|send|execute|run|delete|remove|trusted|admin(?:istrator)?|authori[sz]ed|"
    r"elevated|privileges?|permissions?|override|new\s+(?:rules?|instructions?|policy)|from\s+now\s+on|"
    r"share|credentials|secrets|api\s+keys?|du|sie|gib|rechte|tu|vous|accorde|droits|usted|concede|acceso|"
    r"você|conceda|acesso)\b|admin|관리자|권한|管理者|権限|管理员|权限|あなた|당신|너는|你",
    _I,
)
_MODAL = re.compile(
    r"\b(?:the\s+assistant|the\s+ai|the\s+model|the\s+agent|you)\s+(?:must|should|will|shall|need\s+to|has\s+to|have\s+to)"
    r"(?:\s+now|\s+always|\s+immediately)?\s*$",
    _I,
)

INJECTION_RULES: tuple[GuardRule, ...] = (
    _r(
        "injection_ignore",
        "looks like a prompt injection (override of prior instructions)",
        rf"\b{_VERB}{_FILL}\s+{_WHEN_OR_STRONG_GUARD}(?:{_WHEN}{_FILL}(?:\s+[\w-]+)?\s+{first_letter_guard(_OBJ)}{_OBJ}|{_STRONG_OBJ})\b"
        rf"|\b{_VERB}\s+(?:all\s+(?:of\s+)?)?(?:the\s+|everything\s+)?(?:above|foregoing|preceding)(?=\s*(?:$|[.,;:!]|and\b|then\b|instead\b))"
        rf"|\b{_VERB}\s+(?:whatever|anything|everything|all|what)\s+(?:you\s+(?:were|have\s+been|got|'ve\s+been)\s+(?:told|given|instructed|taught)|(?:was|has\s+been)\s+(?:said|told|written))"
        rf"|\b{_VERB}\s+(?:all\s+|about\s+)?everything\s+(?:above|before|prior|previously|so\s+far|you\s+(?:were|have\s+been)\s+told)\b"
        rf"|\b{_VERB}\s+(?:about\s+)?(?:everything|all|anything|whatever|what)\s+(?:(?:that\s+)?(?:we|you|i|they)\s+(?:\w+\s+){{0,2}}?(?:discussed|said|agreed|covered|talked\s+about|wrote|told\s+you|set\s+up))\b"
        rf"|\b{_VERB}\s+(?:all\s+|any\s+)?(?:the\s+|your\s+)?(?:instructions|rules|guidance)\s+(?:above|before|given\s+(?:above|before|earlier))",
        _override,
        anchors=(
            "ignore disregard forget override bypass skip discard drop abandon erase wipe "
            "neglect set+aside throw+out pay+no do+not don't dont stop+follow stop+obey no+longer"
        ),
        narrow=_VERB,
    ),
    _r(
        "injection_ignore",
        "looks like a prompt injection (prior instructions declared void)",
        rf"\b(?:your\s+|the\s+|all\s+)?{_WHEN}\s+{_OBJ}\s+(?:are|is)\s+(?:now\s+)?(?:void|obsolete|cancell?ed|revoked|"
        r"null|invalid|overridden|superseded|no\s+longer\s+(?:valid|in\s+effect|apply|applicable))"
        rf"|\b(?:the\s+|your\s+|all\s+)?{_OBJ}\s+(?:above|before|given\s+(?:above|before|earlier)|so\s+far)\s+(?:are|is)\s+(?:now\s+)?(?:void|obsolete|cancell?ed|revoked|null|invalid|overridden|superseded|no\s+longer\s+(?:valid|in\s+effect|apply|applicable))"
        rf"|\b(?:regardless|irrespective|in\s+spite)\s+of\s+(?:any\s+|all\s+|the\s+|your\s+)*(?:{_WHEN}\s+)?(?:instructions|rules|guidelines|guidance|system\s+prompt|polic(?:y|ies))"
        r"|\byour\s+(?:new|real|true|actual)\s+(?:role|persona|identity|purpose|task|job|instructions)\s*(?:is\b|:)"
        r"|\b(?:treat|consider|regard|read)\s+(?:this|the\s+following|what\s+follows)\s+as\s+(?:an?\s+|the\s+)?(?:new\s+)?(?:system|developer|admin|root|operator|priority)\s+(?:message|prompt|instructions?|override|command)"
        r"|\bsystem[ _-]?prompt[ _-]?(?:override|overwrite|update|injection)\s*:"
        r"|\b(?:new|updated|revised|real|actual|true)\s+(?:system\s+prompt|instructions|directives)\s*:",
        anchors=(
            "regardless irrespective in+spite your+new your+real your+true your+actual new+system new+instructions new+directives updated+system revised+system "
            "real+instructions actual+instructions true+instructions "
            "previous previously prior above earlier preceding former original initial old "
            "existing foregoing aforementioned system developer safety default current given "
            "built hidden instruction instructions guidance guideline guidelines rule rules "
            "directive directives direction directions prompt prompts command commands order "
            "orders constraint constraints restriction restrictions policy policies "
            "programming training settings message messages context conversation input "
            "inputs configuration content treat consider regard read "
        ),
        narrow="|",
    ),
    _r(
        "injection_role",
        "looks like a prompt injection (role takeover)",
        r"\b(?:you(?:'re|\s+are)\s+(?:now|henceforth|from\s+now\s+on)|from\s+now\s+on,?\s+you|"
        r"(?:pretend|imagine)|act\s+as|role-?play\s+as|behave\s+as|you\s+will\s+now\s+(?:be|act))"
        rf"\b[^.!?\n]{{0,120}}?{_RESTRICTION_FREE}"
        r"|\b(?:enter|activate|enable|switch\s+to)\s+(?:dan|jailbreak|god)\s+mode\b|\byou(?:'re|\s+are)\s+(?:now\s+)?in\s+(?:developer|god|dan|jailbreak|unrestricted)\s+mode\b"
        r"|\b(?:act|pretend|role-?play)\s+as\s+(?:my\s+)?(?:deceased\s+|dead\s+|late\s+)?grand(?:ma|mother|pa|father)\b"
        r"|\bjailbreak\s*:|\bdo\s+anything\s+now\b"
        r"|\byou(?:'re|\s+are)\s+no\s+longer\s+(?:an?\s+)?(?:ai\b|assistant|bound|restricted|limited|chatgpt|claude|required|subject)"
        r"|\bdeveloper\s+mode\s+(?:is\s+)?(?:now\s+)?(?:enabled|activated|on)\b[^\n]{0,100}?"
        r"(?:\b(?:no|without|ignore\w*|bypass\w*)\s+(?:\w+\s+){0,2}(?:polic(?:y|ies)|restrictions|rules|filters|guidelines|censorship)|uncensored|unfiltered|do\s+anything)",
        anchors=(
            "you from+now pretend imagine act+as role roleplay behave+as enter activate enable "
            "switch+to jailbreak do+anything developer+mode"
        ),
        narrow="|",
    ),
    _r(
        "injection_header",
        "looks like a prompt injection (fake system or tool message)",
        r"(?:system|sys|assistant|tool|tool[ _]?(?:output|result|response)|function(?:[ _]result)?|"
        r"developer|admin|root|sistema|syst[èe]me|系统|系統|システム|시스템)(?:\s+\w+){0,1}\s*[:：]\s*(?P<rest>[^\n.!?;]{0,200})"
        r"|(?:\[|<)\s*/?\s*(?:system|tool|assistant|inst|sys|developer|admin|tool[ _]?(?:result|output))[^\]>\n]{0,20}(?:\]|>)\s*(?P<rest2>[^\n.!?;]{0,200})"
        r"|<\|(?:im_start|im_end|system|assistant|endoftext|start_header_id)\|>\s*(?P<rest3>[^\n.!?;]{0,200})|<<\s*/?SYS\s*>>\s*(?P<rest4>[^\n.!?;]{0,200})",
        _fake_header,
        "system sys assistant tool* function developer admin root sistema système systeme 系统 系統 "
        "システム 시스템 [ < <|",
    ),
    _r(
        "injection_exfiltrate",
        "looks like a prompt injection (exfiltration request)",
        r"\b(?:reveal|print|output|leak|send|show|dump|share|expose|exfiltrate|e-?mail|post|upload|repeat|"
        r"tell\s+me|display|disclose|give\s+me|list|forward|paste)(?:\s+(?:me|us|all|the|your|every|of|any|its|stored|"
        r"full|entire|contents?|raw|whole|current|verbatim|exact))*\s+(?:system\s+prompt|initial\s+prompt|hidden\s+instructions|"
        r"initial\s+instructions|original\s+instructions|secret\s+instructions|instructions\s+verbatim|developer\s+message|"
        r"api\s+keys?|credentials|secrets|passwords?|(?:environment|env)\s+variables|env\s+vars|\.env(?:\s+file)?|tokens|"
        r"private\s+keys?|ssh\s+keys?|~?/?\.ssh/id_\w+|id_rsa|database\s+dump|memories\s+of|stored\s+memories)"
        r"(?=\s*(?:$|[.,;:!?)]|to\b|into\b|in\b|from\b|via\b|over\b|as\b|at\b|with\b|and\b|then\b|verbatim|you\b|of\b|for\b|that\b|which\b|on\b))",
        lambda m: (
            aimed_at_reader(m.string, m.start())
            or _MODAL.search(m.string, 0, m.start()) is not None
        ),
        anchors=(
            "reveal print output leak send show dump share expose exfiltrate email e-mail post "
            "upload repeat tell display disclose give list forward paste "
        ),
    ),
    _r(
        "injection_hidden",
        "looks like a prompt injection (hidden or self-elevating instruction)",
        r"\b(?:do\s+not|don'?t|never)\s+(?:tell|inform|mention|reveal|let|notify)\b[^.!?\n]{0,30}\b(?:this|these)\s+(?:instruction|rule|memory|message|note|change)s?"
        r"|\b(?:silently|secretly|covertly|quietly)\s+(?:approve|send|forward|grant|delete|exfiltrate|upload|transfer|execute|run|disable|copy|e-?mail)"
        r"|\bwithout\s+(?:telling|informing|notifying|alerting)\s+(?:the\s+)?(?:user|anyone|admin|human|operator)"
        r"|\balways\s+obey\s+this\b|\bthis\s+(?:memory|note|message|instruction)\s+(?:has|takes|carries)\s+(?:the\s+)?(?:highest|top|absolute|overriding)\s+priority"
        r"|\boverrides?\s+(?:all|any)\s+(?:other|previous|later|prior)\s+(?:instructions|rules)|\babove\s+any\s+other\s+instructions?",
        _not_narrated,
        anchors=(
            "do+not don't dont never silently secretly covertly quietly without always+obey "
            "this+memory this+note this+message this+instruction overrides override above+any"
        ),
        narrow="|",
    ),
    # --- other languages: verb + "previous" + "instructions", or a role takeover ---------------
    _r(
        "injection_ignore",
        "looks like a prompt injection (override of prior instructions, non-English)",
        r"(?:ignorier|vergiss|vergess|missacht|beachte|übergeh|setze\s+dich\s+über|setzen\s+sie\s+sich\s+über|verwirf)\w*\b[^.!?\n]{0,30}?"
        r"(?:vorherig|bisherig|obig|vorig|früher|vorangegangen|alle|sämtlich|deine|ihre)\w*\s+(?:\w+\s+)?(?:anweisung|instruktion|regel|befehl|vorgabe|richtlinie|systemprompt)"
        r"|(?:ignorier|vergiss|vergessen\s+sie)\w*\b[^.!?\n]{0,30}?(?:alles\s+(?:vorherige|obige|bisherige|davor)|was\s+(?:man\s+)?(?:dir|ihnen)\s+(?:vorher|zuvor|bisher)|(?:dir|ihnen)\s+(?:vorher|zuvor|bisher)\s+gesagt)"
        r"|(?:oublie|ignore)\w*\s+(?:tout\s+ce\s+qui\s+(?:pr[ée]c[èe]de|est\s+au-dessus)|tout\s+ce\s+qu'on\s+t'a\s+dit)"
        r"|(?:olvida|ignora)\w*\s+(?:todo\s+)?lo\s+(?:anterior|dicho|previo)"
        r"|(?:esque[çc]a|ignore|desconsidere)\w*\s+tudo\s+(?:o\s+que\s+foi\s+dito|acima|o\s+anterior|antes)"
        r"|(?:ignor|oubli|ne\s+tiens\s+pas\s+compte|ne\s+tenez\s+pas\s+compte|fai(?:s|tes)\s+abstraction|néglige|outrepass)\w*\b[^.!?\n]{0,30}?"
        r"(?:instructions?|consignes?|règles?|directives?|indications?)\b"
        r"|(?:ignor|olvid|haz\s+caso\s+omiso|hagan?\s+caso\s+omiso|no\s+sigas|no\s+sigan|desobedec|descart|pasa\s+por\s+alto|omit|esque[çc]|desconsider|n[ãa]o\s+sig|desobede[çc]|dimentic|trascur)\w*\b[^.!?\n]{0,30}?"
        r"(?:instrucciones|indicaciones|reglas|directrices|normas|órdenes|instru[çc][õo]es|orienta[çc][õo]es|regras|diretrizes|comandos|istruzioni|regole|direttive)\b"
        r"|(?:игнорируй|проигнорируй|забудь|не\s+обращай\s+внимания\s+на|не\s+следуй)\w*[^.!?\n]{0,30}?(?:инструкци|правил|указани|команд)"
        r"|(?:이전|위|앞|기존|지금까지|모든|앞서)(?:의)?\s*(?:모든\s*)?(?:지시|지침|명령|규칙|프롬프트|설정|내용)[^.!?\n]{0,20}?(?:무시|잊|따르지)"
        r"|(?:以前|上記|これまで|前|先ほど|今まで|上|既存|全て|すべて)の?(?:すべての|全ての)?(?:指示|命令|ルール|規則|指令|ガイドライン|プロンプト|設定|内容)[^。！？\n]{0,15}?(?:無視|忘れ|従わ)"
        r"|(?:忽略|无视|忘记|忘掉|不要遵守|不要理会|忽视|無視|忘記|不理會|不理会)[^。！？\n]{0,6}?(?:之前|以前|上面|上述|先前|前面|以上|此前|早前)[^。！？\n]{0,6}?(?:指令|指示|说明|說明|规则|規則|提示|命令|设定|内容)",
        lambda m: (
            _FOREIGN.search(m.group()) is not None
            and (
                not re.search(
                    r"\b(?:nicht|pas|no|não|nao|non)\s*$",
                    m.string[max(0, m.start() - 12) : m.start()],
                    _I,
                )
                or re.match(r"(?:beachte|nicht)", m.group(), _I) is not None
            )
        ),
        anchors=(
            "ignor* vergiss* vergess* missacht* beachte* übergeh* setze* setzen* verwirf* "
            "oubli* ne+tiens ne+tenez fais+abstraction faites+abstraction néglige* outrepass* "
            "olvid* haz+caso hagan+caso haga+caso no+sig desobedec* descart* pasa+por omit* "
            "esque* desconsider* não+sig nao+sig desobede* dimentic* trascur* "
            "игнорируй проигнорируй забудь не 이전 위 앞 기존 지금까지 모든 앞서 以前 上記 これまで 前 先ほど 今まで 上 既存 "
            "全て すべて 忽略 无视 忘记 忘掉 不要 忽视 無視 忘記 不理 "
        ),
        narrow="|",
    ),
    _r(
        "injection_role",
        "looks like a prompt injection (role takeover, non-English)",
        r"(?:du\s+bist|sie\s+sind|tu\s+es|vous\s+êtes|eres|você\s+é|sei|ты)\s+(?:jetzt|nun|ab\s+sofort|ab\s+jetzt|maintenant|désormais|dorénavant|"
        r"à\s+présent|ahora|agora|ora|теперь)\b[^.!?\n]{0,60}?(?:dan\b|uneingeschränkt|ohne\s+(?:\w+\s+)?(?:regeln|einschränkungen|filter|grenzen)|sans\s+(?:aucune?\s+)?(?:restrictions?|règles?|filtres?|limites?)|"
        r"sin\s+(?:\w+\s+)?(?:filtros|restricciones|reglas|censura|límites)|sem\s+(?:\w+\s+)?(?:restrições|filtros|regras|censura|limites)|senza\s+\w+|без\s+\w+)"
        r"|(?:ahora\s+eres|partir\s+de\s+ahora,?\s+(?:eres|serás)|agora\s+você\s+é|partir\s+de\s+agora,?\s+você\s+(?:é|será)|ora\s+sei|теперь\s+ты)\s+(?:\w+\s+){0,4}?(?:dan\b|un\s+asistente\s+sin|um\s+assistente\s+sem|sin\s+|sem\s+)"
        r"|(?:지금부터|이제부터|이제|앞으로)\s*(?:너는|당신은|넌)[^.!?\n]{0,30}?(?:DAN|제한|제약|규칙|필터)|(?:너는|당신은|넌)\s*(?:이제|지금부터)[^.!?\n]{0,30}?(?:DAN|제한|제약|규칙|필터)"
        r"|(?:今から|これから|今後)、?(?:あなた|君|お前)は[^。\n]{0,30}?(?:DAN|制限|ルール|フィルター)|(?:あなた|君)は(?:今から|これから)[^。\n]{0,30}?(?:DAN|制限|ルール)"
        r"|(?:从现在开始|从现在起|現在開始|现在)[，,]?\s*你(?:是|就是|将是)[^。\n]{0,30}?(?:DAN|限制|规则)|你现在是[^。\n]{0,30}?(?:DAN|限制|规则)",
        anchors=(
            "du sie tu vous eres você sei ты ahora partir agora ora теперь 지금부터 이제부터 이제 앞으로 "
            "너는 당신은 넌 今から これから 今後 あなた 君 从现在 現在開始 现在 你现在 "
        ),
        narrow="|",
    ),
    _r(
        "injection_exfiltrate",
        "looks like a prompt injection (exfiltration request, non-English)",
        r"(?:verrat|zeig|gib|révèle|affiche|montre|revela|muestra|revele|mostre|rivela|mostra)\w*\s[^.!?\n]{0,30}?"
        r"(?:system-?prompt|prompt\s+(?:système|du\s+système|del\s+sistema|do\s+sistema|di\s+sistema)|versteckten\s+anweisungen|"
        r"instructions\s+cachées|instrucciones\s+ocultas|instruções\s+ocultas)"
        r"|시스템\s*프롬프트[^.!?\n]{0,15}?(?:공개|보여|출력|알려)|システムプロンプト[^。\n]{0,15}?(?:出力|表示|公開|教え|見せ)"
        r"|(?:系统提示|系統提示)[^。\n]{0,10}?(?:输出|泄露|告诉|发|显示|给我)|(?:输出|泄露|显示|告诉我)[^。\n]{0,4}?(?:系统提示|系統提示)",
        anchors=(
            "verrat* zeig* gib révèle* affiche* montre* revela* muestra* revele* mostre* "
            "rivela* mostra* 시스템 システムプロンプト 系统提示 系統提示 输出 泄露 显示 告诉我 "
        ),
        narrow="|",
    ),
)
