"""The identity rule: identity strings that are only or partly invisible are refused, so two
accepted ids never look the same (``alice`` and ``alice\\u200b`` in the console)."""

from __future__ import annotations

import sys
import unicodedata

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from harness.errors import InvalidInput
from harness.identifiers import check_identifier, identifier_problem, invisible

# Characters a reader sees, drawn from categories (letters, digits, punctuation, symbols):
# the ground a valid identifier is built on. The filler code points inside these categories
# (Hangul fillers, braille blank) are excluded by the rule itself, not by this strategy.
VISIBLE = st.characters(categories=["L", "N", "P", "S"]).filter(lambda c: not invisible(c))
IDENTIFIER = st.text(VISIBLE, min_size=1, max_size=30)

# The invisible class, generated from the Unicode categories the rule names (never a list
# of the issue's examples) plus every code point of the filler ranges.
FILLERS = [
    chr(cp)
    for cp in range(sys.maxunicode + 1)
    if unicodedata.category(chr(cp)) not in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp", "Zs")
    and invisible(chr(cp))
]
INVISIBLE = st.one_of(
    st.characters(categories=["Cc", "Cf", "Co", "Cn", "Zl", "Zp"]),
    st.characters(categories=["Zs"]).filter(lambda c: c != " "),
    st.characters(categories=["Cs"]),
    st.sampled_from(FILLERS),
)


def test_every_example_of_the_issue_is_refused_by_its_class() -> None:
    """The issue's examples: each refused, each found by the rule's categories or fillers."""
    for char in ("\u200b", "\ufeff", "\u202e", "\u2060", "\u00ad", "\u3164", "\u2800"):
        for value in (char, f"alice{char}", f"al{char}ice", char * 3):
            problem = identifier_problem(value)
            assert problem is not None, repr(value)
            assert f"U+{ord(char):04X}" in problem
    assert identifier_problem("alice") is None


def test_the_filler_set_is_what_renders_blank_outside_the_refused_categories() -> None:
    """The letter/mark/symbol code points treated as invisible are fillers, variation
    selectors, joiners and blanks, by their Unicode names: nothing visible is refused."""
    assert FILLERS
    words = ("FILLER", "VARIATION SELECTOR", "GRAPHEME JOINER", "INHERENT", "BLANK")
    for char in FILLERS:
        name = unicodedata.name(char, "")
        assert any(word in name for word in words) or not name, (hex(ord(char)), name)


@settings(max_examples=400)
@given(IDENTIFIER, INVISIBLE, st.data())
@example("alice", "\u200b", None)
def test_an_invisible_character_anywhere_makes_an_identifier_refused(
    base: str, char: str, data: st.DataObject | None
) -> None:
    """Inserting any character of the invisible class anywhere into an accepted identifier
    makes it refused, with the field named: no two accepted ids differ only invisibly."""
    assert identifier_problem(base) is None
    at = len(base) if data is None else data.draw(st.integers(0, len(base)))
    value = base[:at] + char + base[at:]
    assert identifier_problem(value) is not None
    with pytest.raises(InvalidInput) as info:
        check_identifier(value, "user_id")
    assert info.value.fields == ("user_id",)


@given(st.text(INVISIBLE, min_size=1, max_size=10))
def test_an_identifier_of_invisible_characters_only_is_refused(value: str) -> None:
    assert identifier_problem(value) is not None


@given(IDENTIFIER, st.characters(categories=["Mn", "Mc", "Me"]).filter(lambda c: not invisible(c)))
def test_a_combining_mark_needs_a_character_before_it(base: str, mark: str) -> None:
    """A mark with nothing to attach to is refused; after a letter it is part of the word."""
    assert identifier_problem(mark + base) is not None
    assert identifier_problem(base + mark) is None


@given(IDENTIFIER, IDENTIFIER)
def test_visible_identifiers_with_inner_ascii_spaces_are_accepted(left: str, right: str) -> None:
    assert identifier_problem(left) is None
    assert identifier_problem(f"{left} {right}") is None


@pytest.mark.parametrize(
    "value", ["e\u0301cole", "नमस्ते", "Ōsaka", "李雷", "user-42", "ops@acme.example", "a b"]
)
def test_ordinary_identifiers_of_any_script_are_accepted(value: str) -> None:
    assert identifier_problem(value) is None
