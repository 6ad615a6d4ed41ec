"""Short texts where a vectorizer's reading could go wrong, for comparing counts with
scikit-learn's (issue 21): Greek capitals whose lower case depends on the neighbours (final
sigma), accents, dotted capitals, one-letter words, and every kind of space and punctuation
between words, with empty and token-less texts at the end."""

from __future__ import annotations

import random

WORDS = ("revenue grew Σίσυφος ΟΔΟΣ naïve café Q3 EBITDA margin guidance a I we our the and of "
         "co-op 2024 10% $5.2 billion ok OK x y über straße İstanbul ΣΑΣ").split()
SEPARATORS = (" ", "  ", "\n", ", ", ". ", "\t", "-", "'", " \u2003 ")


def texts(seed: int, n: int) -> list[str]:
    """``n`` random texts of up to 25 words (seeded), then four edge cases."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        words = [rng.choice(WORDS) for _ in range(rng.randint(0, 25))]
        seps = [rng.choice(SEPARATORS) for _ in words]
        out.append("".join(w + s for w, s in zip(words, seps, strict=True)))
    return out + ["", "   ", "a", "I x"]
