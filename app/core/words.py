"""Words as the engines' word tokenizer splits names, and a word's plain singular and
plural forms: what the query side and the store's name filter count as one word, where no
stemmer runs (the catalog's word counts, the name exclusions every engine must match alike)."""

from __future__ import annotations

import re

_WORD = re.compile(r"[^\W_]+")
# Where a phrase a shopper wrote ends: "not over-ear, for running", "a kettle (glass)".
CLAUSE_BREAK = re.compile(r"[,;:.!?()/]")

# A shorter word ending in "s" ("gas", "bus") is not read as a plural.
PLURAL_FROM = 4


def split_words(text: str) -> list[str]:
    """`text`'s words, lowercase: runs of letters and digits ("Over-Ear" is "over", "ear")."""
    return _WORD.findall(text.lower())


def plain_forms(word: str) -> tuple[str, ...]:
    """`word` and its plain singular/plural forms ("desks", "desk"): one word to a stemmer."""
    # Not word + "s" after an "s": "wireles" + "s" is the word it misspells, not a plural.
    forms = [word] if word.endswith("s") else [word, word + "s"]
    if word.endswith("s") and len(word) >= PLURAL_FROM:
        forms.append(word[:-1])  # "amps": "amp"
    if word.endswith("es") and len(word) > PLURAL_FROM:
        forms.append(word[:-2])  # "boxes": "box"
    return tuple(dict.fromkeys(forms))
