"""Generated English-like text for the audit tests: sentences from a small grammar over real
words, so n-grams repeat the way they do in prose (function words, set phrases) without any
download."""

from __future__ import annotations

import numpy as np

NOUNS = (
    "model data label batch gradient layer network corpus question answer patient hospital "
    "river mountain city teacher student market engine signal theory method result sample "
    "window garden kitchen letter report table record voice image story country history"
).split()
VERBS = (
    "trains predicts reads writes measures compares finds builds moves holds carries "
    "opens closes sends keeps changes follows explains shows tests learns"
).split()
ADJECTIVES = (
    "small large quiet bright old new careful noisy clean rapid slow early late simple "
    "strange common rare open hidden final"
).split()
ADVERBS = "quickly slowly often rarely again carefully almost never always together".split()
PREPOSITIONS = "in on under over near behind after before with without through".split()
#: a phrase that appears in many documents (licence boilerplate); GPT-3's rule ignores it
BOILERPLATE = (
    "permission is hereby granted free of charge to any person obtaining a copy of this "
    "software and associated documentation files"
)


def sentence(rng: np.random.Generator) -> str:
    u = rng.random(12)  # one draw per sentence; indexing lists is much faster than rng.choice

    def pick(words: tuple | list, x: float) -> str:
        return words[int(x * len(words))]

    def noun_phrase(a: float, b: float, c: float) -> str:
        adj = f"{pick(ADJECTIVES, b)} " if a < 0.6 else ""
        return f"the {adj}{pick(NOUNS, c)}"

    parts = [noun_phrase(*u[0:3]), pick(VERBS, u[3]), noun_phrase(*u[4:7])]
    if u[7] < 0.5:
        parts += [pick(PREPOSITIONS, u[8]), noun_phrase(u[9], u[10], u[11])]
    if u[11] < 0.4:
        parts.append(pick(ADVERBS, (u[11] * 2.5) % 1))
    text = " ".join(parts)
    return text[0].upper() + text[1:] + pick((".", ".", "!", "?", ";"), (u[3] * 7) % 1)


def paragraph(rng: np.random.Generator, sentences: int) -> str:
    return " ".join(sentence(rng) for _ in range(sentences))


def documents(n: int, rng: np.random.Generator, sentences: tuple[int, int] = (8, 20)) -> list[str]:
    return [paragraph(rng, int(rng.integers(*sentences))) for _ in range(n)]


def edit_words(text: str, k: int, rng: np.random.Generator) -> str:
    """Replace ``k`` words at random positions: a near-duplicate."""
    ws = text.split()
    for i in rng.choice(len(ws), k, replace=False):
        ws[i] = "altered"
    return " ".join(ws)
