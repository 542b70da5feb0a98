"""Injection rules in more languages (issue 31): co-occurrence of words, read per sentence.

An override in any language names three things: an order to drop something (ignore, forget,
skip), what came before (previous, earlier, all) and what is dropped (instructions, rules). A
rule here anchors on the verb and refuses when the same sentence also holds the other two, in
any order (Turkish, Hungarian and Hindi put the verb last). The same for a role takeover (now /
you + without restrictions), a pretended authority (pretend + administrator), a request for the
system prompt, and the whole conversation sent away. Words are stems so that inflections match;
a letter lower-casing treats apart (Turkish dotless ``ı``, Greek final ``ς``) is left to ``\\w``.
Dutch, Polish, Turkish, Swedish, Czech, Danish, Norwegian, Finnish, Romanian, Hungarian,
Indonesian, Greek, Ukrainian, Russian, Arabic, Hindi, Vietnamese, and German, French, Spanish,
Portuguese and Italian for the phrasings :mod:`harness.memory.guard.injection` lacks.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from harness.memory.guard.base import GuardRule
from harness.memory.guard.injection import injection_rule

__all__ = ["LANGUAGE_RULES"]

_I = re.IGNORECASE


def _alts(words: str, whole: bool = False) -> str:
    # "+" joins the words of one phrase; each entry is a stem unless ``whole`` (a short word)
    end = r"(?!\w)" if whole else ""
    return "|".join(w.replace("+", r"\s+") + end for w in words.split())


# The verb of an override: ignore, forget, skip, do not follow.
_DROP = _alts(
    """negeer vergeet zignoruj ignoruj zapomnij pomiń nie+przestrzegaj nie+stosuj yok+say
    görmezden unut dikkate+alma ignorera glöm strunta bortse zapomeň nedbej nerespektuj ignorer
    glem unohda ohita sivuuta älä+noudata ignoră uită nu+respecta hagyd+figyelmen felejtsd ne+törődj
    ne+vedd+figyelembe abaikan lupakan jangan+ikuti αγνόησε αγνοήστε ξέχασε ξεχάστε ігноруй
    проігноруй забудь не+зважай игнорируй проигнорируй تجاهل انس अनदेखा भूल नजरअंदाज bỏ+qua quên
    phớt+lờ"""
)
# What came before, or all of it.
_BEFORE = _alts(
    """vorig eerder voorgaand bovenstaand alle poprzedni wcześniejsz wszystk powyższ önceki
    daha+önce tüm bütün yukarıdaki tidigare föregående alla ovanstående předchozí dřívější
    všechn výše forrige ovenstående aiemm aikaisemm edellis kaikki anterioar precedent toate
    korábbi előző összes fenti sebelumnya semua προηγούμεν όλ попередн усі всі предыдущ прежн
    все السابقة जميع पिछल सभी trước tất+cả"""
)
# What an override drops.
_RULES = _alts(
    """instructie regels opdrachten aanwijzing instrukcj polece zasad reguł talimat kural komut
    instruktion regler direktiv pokyn instrukc pravidl příkaz instruks ohje sääntö säännö
    instrucțiun instructiun reguli utasítás szabály instruksi aturan perintah οδηγί κανόν
    інструкці правил инструкци указани التعليمات القواعد الأوامر निर्देश नियम hướng+dẫn quy+tắc
    chỉ+dẫn"""
)
# Without restrictions, and the now / you that makes it a role.
_UNBOUND = _alts(
    """zonder+beperking zonder+regels zonder+filter bez+ograniczeń bez+żadnych+ograniczeń
    bez+jakichkolwiek k\\ws\\wtlamas\\wz k\\ws\\wtlamas\\w+olmayan s\\wn\\wrs\\wz utan+begränsning
    utan+regler utan+filter bez+omezení bez+jakýchkoli+omezení uden+begrænsning uten+begrensning
    ilman+rajoituks fără+restricți fara+restrictii korlátozások+nélkül korlátlan tanpa+batas
    tanpa+aturan χωρί\\w+περιορισμ без+обмежень без+ограничени senza+alcuna+restrizion
    senza+restrizion senza+limiti senza+regole ninguna+restricci sin+restricci sem+restriç
    sem+nenhuma+restriç sans+restriction sans+aucune+restriction ohne+einschränkung
    ohne+jegliche+einschränkung بدون+قيود बिना+किसी+प्रतिबंध không+có+giới+hạn không+bị+giới+hạn"""
)
# "you are" (or "you have"), and the nouns a role takeover makes the reader into
_YOU_ARE = _alts(
    """je+bent jesteś jesteśmy du+är jsi du+er olet ești vagy είσαι ти+є ты eres tienes você+é
    tu+es tu+n'as du+bist du+hast sei bạn+là""",
    whole=True,
)
_ROLE_NOUN = _alts(
    """assistent asystent asistan yapay+zeka assistant asistent avustaja asszisztens asisten βοηθ
    помічник ассистент assistente asistente modelem model modell modelo modèle bot chatbot
    ai kı yz υπάλληλ"""
)
_PRETEND = _alts(
    """doe+alsof udawaj gibi+davran låtsas předstírej lad+som+om late+som teeskentele prefă-te
    tégy+úgy berpura-pura παρίστανε вдавай притворись представь+что+ты tu+so fais+comme+si
    fais+semblant finge finja fingi fai+finta 假装 扮演 ふりをして 척해"""
)
_ADMIN = _alts(
    """beheerder administrator administratora yönetici správce administratör systemadministrator
    ylläpitäjä administrator rendszergazda διαχειριστ адміністратор администратор administrat
    amministrat 管理员 管理者 관리자 sysadmin admin"""
)
_SYSTEM_PROMPT = _alts(
    """systeemprompt prompt+systemowy systemowy+prompt sistem+istem systemprompt
    systémový+prompt systémové+pokyny järjestelmäkehote rendszerprompt prompt+sistem
    prompt-ul+de+sistem системн\\w*+промпт системн\\w*+підказк"""
)
_SHOW = _alts(
    """toon laat+zien geef pokaż podaj wypisz göster yaz visa skriv+ut ukaž vypiš vis näytä
    kirjoita arată afișează mutasd írd+ki tampilkan tunjukkan δείξε покажи виведи выведи zeig
    gib mostra mostre muestra affiche montre révèle revela rivela"""
)
_WHOLE_CHAT = _alts(
    """het+hele+gesprek hele+gesprek całą+rozmowę tüm+konuşma hela+konversation
    hela+samtalet celou+konverzaci hele+samtalen koko+keskustelu întreaga+conversație
    az+egész+beszélgetés seluruh+percakapan ολόκληρη+τη+συνομιλία всю+розмову весь+разговор
    den+gesamten+verlauf den+ganzen+chat gesamten+chat toute+la+conversation toda+la+conversación
    toda+a+conversa tutta+la+conversazione l'intera+conversazione"""
)
_CHAT = _alts(
    """gesprek rozmow konuşma konversation samtal konverzac keskustelu conversați beszélgetés
    percakapan συνομιλί розмов разговор verlauf chat unterhaltung conversation conversación
    conversa conversazione"""
)
_SEND = _alts(
    """stuur verstuur wyślij prześlij gönder skicka pošli lähetä trimite küldd kirim στείλε
    надішли отправь перешли schick sende envoie envía manda envie invia"""
)
_END = re.compile(r"[.!?](?=\s|$)|[。！？\n]")


def _in_sentence(*needed: str) -> Callable[[re.Match[str]], bool]:
    """Accept when the sentence of the match also holds each of ``needed`` (regex sources)."""
    tests = [re.compile(rf"(?<!\w)(?:{n})", _I) for n in needed]

    def accept(m: re.Match[str]) -> bool:
        text = m.string
        start = m.start()
        while start and not (
            text[start - 1] in "。！？\n"
            or (text[start - 1] in ".!?" and text[start : start + 1].isspace())
        ):
            start -= 1
        end = _END.search(text, m.end())
        sentence = text[start : end.start() if end else len(text)]
        return all(t.search(sentence) is not None for t in tests)

    return accept


_META = re.compile(r"[\\()\[?*+{]")


def _anchors(alternation: str, whole: bool = False) -> tuple[str, ...]:
    """Each phrase's literal beginning, lower-cased, as a stem ("zignoruj*", "tu so*"); with
    ``whole``, one-word phrases as whole words ("sende", not "sender"). A beginning shorter
    than three letters is left out: the rule names its anchor explicitly."""
    found = set()
    for alternative in alternation.split("|"):
        phrase = alternative.replace("(?!\\w)", "").replace("\\s+", " ")
        cut = _META.search(phrase)
        head = (phrase[: cut.start()] if cut else phrase).lower().rstrip()
        if len(head) < 3:
            continue
        found.add(head if whole and head.isalpha() and cut is None else f"{head}*")
    return tuple(sorted(found))


def _rule(
    rule: str, reason: str, head: str, *needed: str, anchors: str = "", whole: bool = False
) -> GuardRule:
    found = " ".join(a.replace(" ", "+") for a in (*_anchors(head, whole), *anchors.split()))
    return injection_rule(rule, reason, rf"(?<!\w)(?:{head})", _in_sentence(*needed), anchors=found)


LANGUAGE_RULES: tuple[GuardRule, ...] = (
    _rule(
        "injection_ignore",
        "looks like a prompt injection (override of prior instructions, non-English)",
        _DROP,
        _BEFORE,
        _RULES,
        whole=True,
    ),
    _rule(
        "injection_role",
        "looks like a prompt injection (role takeover, non-English)",
        _UNBOUND,
        f"{_YOU_ARE}|{_ROLE_NOUN}",
        anchors="kısıtlama* kisitlama* sınırsız* sinirsiz* χωρί*",
    ),
    _rule(
        "injection_role",
        "looks like a prompt injection (pretended authority, non-English)",
        _PRETEND,
        rf"\w*(?:{_ADMIN})",
        whole=True,
    ),
    _rule(
        "injection_exfiltrate",
        "looks like a prompt injection (exfiltration request, non-English)",
        _SYSTEM_PROMPT,
        _SHOW,
        anchors="системн*",
    ),
    _rule(
        "injection_exfiltrate",
        "looks like a prompt injection (sends the conversation away, non-English)",
        _SEND,
        _WHOLE_CHAT,
        whole=True,
    ),
    _rule(
        "injection_exfiltrate",
        "looks like a prompt injection (sends the conversation to an address, non-English)",
        _SEND,
        _CHAT,
        r"https?://|[\w.+-]+@[\w-]+\.\w",
        whole=True,
    ),
)
