"""A passage's n-gram counts after spans of it are replaced, from its counts before and the
words the spans touch (SPEC §12, issue 21: the document defence scores every candidate type of
every document by re-scoring the passages it changes; re-vectorising whole passages for that was
200 of the 221 s the dev corpus's plans cost, and grew with the corpus).

For the analyzers the attacker families use, the counts of a text are a sum over its
whitespace-separated words: ``char_wb`` n-grams never leave a word, and ``word`` tokens never
cross whitespace, so a word n-gram only joins its n consecutive tokens. Replacing spans therefore
changes only the n-grams of a *window*: the whitespace words the spans touch, widened by n − 1
tokens on each side for word n-grams (an n-gram that reaches outside the window touches no
replaced token and is counted alike before and after). Hence, exactly (integer counts)::

    counts(after) = counts(before) − counts(window before) + counts(window after)

windows whose widened ranges meet are merged. The rows are the rows ``transform`` gives (same
values, same sorted columns, no stored zeros), so every score computed from them is the same to
the last bit; a vectorizer this reasoning does not cover (another analyzer, stop words, accent
stripping, a custom tokenizer) is handed the replaced texts whole.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np
from scipy import sparse

#: (start, end, replacement) in a passage's own coordinates.
Span = tuple[int, int, str]


def kept_spans(spans: Sequence[Span]) -> list[Span]:
    """``spans`` sorted, those overlapping an earlier kept span dropped (the rule of
    ``replaced_text``)."""
    out: list[Span] = []
    pos = 0
    for s, e, after in sorted(spans):
        if s < pos:
            continue
        out.append((s, e, after))
        pos = e
    return out


def replaced_text(text: str, spans: Sequence[Span]) -> str:
    """``text`` with each kept span (``kept_spans``) replaced by its replacement."""
    out, pos = [], 0
    for s, e, after in kept_spans(spans):
        out += [text[pos:s], after]
        pos = e
    out.append(text[pos:])
    return "".join(out)


def supports(vectorizer) -> bool:
    """Whether ``edited_counts`` may use windows for this fitted ``CountVectorizer`` (or a
    subclass): word or char_wb analyzer, the default tokenizer and preprocessing, no stop words."""
    return (getattr(vectorizer, "analyzer", None) in ("word", "char_wb")
            and getattr(vectorizer, "input", None) == "content"
            and vectorizer.preprocessor is None and vectorizer.tokenizer is None
            and vectorizer.stop_words is None and vectorizer.strip_accents is None)  # fmt: skip


def _counts(vectorizer, texts: Sequence[str]) -> sparse.csr_matrix:
    """Raw counts (``CountVectorizer.transform``, also for a TF-IDF vectorizer), sorted rows."""
    from sklearn.feature_extraction.text import CountVectorizer

    x = sparse.csr_matrix(CountVectorizer.transform(vectorizer, list(texts)))
    x.sort_indices()
    return x


def _window_counts(vectorizer, windows: Sequence[str]) -> sparse.csr_matrix:
    """``_counts`` of the windows, each distinct window counted once per process
    (``row_memo.counts``: a type's windows recur in every passage and document that has it)."""
    from . import row_memo

    return row_memo.counts(vectorizer, windows)


def raw_counts(vectorizer, texts: Sequence[str]) -> sparse.csr_matrix:
    """The counts ``edited_counts`` starts from: ``CountVectorizer.transform`` of ``texts``,
    remembered with the vectorizer's rows (``row_memo.counts``: the defence scores a document's
    passages with ``transform`` and then edits them from these counts)."""
    from . import row_memo

    return row_memo.counts(vectorizer, texts)


def _windows(text: str, spans: list[Span], context: int, tokens) -> list[tuple[int, int]]:
    """Character ranges of ``text`` (whitespace-bounded) holding every n-gram the spans change."""
    n = len(text)
    ranges: list[list[int]] = []
    for s, e, _ in spans:
        a, b = s, e
        while a > 0 and not text[a - 1].isspace():
            a -= 1
        while b < n and not text[b].isspace():
            b += 1
        a, b = _widen_left(text, a, context, tokens), _widen_right(text, b, context, tokens)
        if ranges and a <= ranges[-1][1]:
            ranges[-1][1] = max(ranges[-1][1], b)
        else:
            ranges.append([a, b])
    return [(a, b) for a, b in ranges]


def _widen_left(text: str, a: int, context: int, tokens) -> int:
    """``a`` moved left over whole words until they hold ``context`` tokens (or text starts)."""
    held = 0
    while held < context and a > 0:
        while a > 0 and text[a - 1].isspace():
            a -= 1
        end = a
        while a > 0 and not text[a - 1].isspace():
            a -= 1
        held += len(tokens(text[a:end]))
    return a


def _widen_right(text: str, b: int, context: int, tokens) -> int:
    """``b`` moved right over whole words until they hold ``context`` tokens (or text ends)."""
    held, n = 0, len(text)
    while held < context and b < n:
        while b < n and text[b].isspace():
            b += 1
        start = b
        while b < n and not text[b].isspace():
            b += 1
        held += len(tokens(text[start:b]))
    return b


def edited_counts(vectorizer, texts: Sequence[str], base: sparse.csr_matrix | None,
                  edits: Sequence[tuple[int, Sequence[Span]]]) -> sparse.csr_matrix:
    """Counts (rows = ``edits``) of ``texts[i]`` with ``spans`` replaced, for each ``(i, spans)``
    of ``edits``; ``base``: ``raw_counts(vectorizer, texts)`` (computed when None). Equal to
    ``raw_counts`` of the replaced texts (module docstring)."""
    if not supports(vectorizer):
        return _counts(vectorizer, [replaced_text(texts[i], spans) for i, spans in edits])
    if base is None:
        base = _counts(vectorizer, texts)
    rows = base[[i for i, _ in edits]] if len(edits) else base[:0]
    changes = _window_changes(vectorizer, texts, edits)
    if changes is not None:
        agg, w = changes
        rows = sparse.csr_matrix(rows + agg @ w)
    rows = sparse.csr_matrix(rows, dtype=base.dtype)
    rows.eliminate_zeros()
    rows.sort_indices()
    if rows.nnz and rows.data.min() < 0:  # a window missed an n-gram: a bug, never a wrong score
        raise RuntimeError("edited_counts: negative count; the windows missed a changed n-gram")
    return rows


def count_changes(vectorizer, texts: Sequence[str],
                  edits: Sequence[tuple[int, Sequence[Span]]]) -> sparse.coo_matrix:
    """counts(after) − counts(before) of each edit (rows = ``edits``), from the windows the
    spans touch only: (edit, term, change) triples, no zeros, each (edit, term) once. Only for
    a vectorizer ``supports`` accepts."""
    if not supports(vectorizer):
        raise ValueError("count_changes needs a word or char_wb vectorizer with default processing")
    shape = (len(edits), len(vectorizer.vocabulary_))
    changes = _window_changes(vectorizer, texts, edits)
    if changes is None:
        return sparse.coo_matrix(shape)
    agg, w = changes
    out = sparse.csr_matrix(agg @ w.astype(np.float64))
    out.sum_duplicates()
    out.eliminate_zeros()
    return out.tocoo()


def _window_changes(vectorizer, texts: Sequence[str], edits: Sequence[tuple[int, Sequence[Span]]]):
    """(agg, w): the counts ``w`` of every edit's windows before (−) and after (+), and ``agg``
    (edits × windows, ±1) that sums them per edit; None when no edit has a window."""
    windows, owner, sign = _edit_windows(vectorizer, texts, edits)
    if not windows:
        return None
    w = _window_counts(vectorizer, windows)
    agg = sparse.csr_matrix((np.asarray(sign, dtype=w.dtype if w.dtype.kind == "f" else np.int64),
                             (owner, np.arange(len(windows)))), shape=(len(edits), len(windows)))
    return agg, w


#: The windows last cut, per thread: the document defence scores the same passages and edits
#: under each member of its defender in turn (two halves × word, character and retrieval
#: models), and members that read words alike cut the same windows (issue 21).
_LAST = threading.local()


def _edit_windows(vectorizer, texts: Sequence[str], edits: Sequence[tuple[int, Sequence[Span]]]
                  ) -> tuple[list[str], list[int], list[float]]:
    """Every edit's windows, before and after (``windows``), the edit each belongs to
    (``owner``) and its sign (−1 before, +1 after); the last call's lists again when ``texts``
    and ``edits`` are the same objects and the vectorizer cuts words alike."""
    if vectorizer.analyzer == "word":
        context = vectorizer.ngram_range[1] - 1
        cut = ("word", context, vectorizer.token_pattern, vectorizer.lowercase) if context else ("word", 0)
    else:
        context, cut = 0, ("word", 0)  # char_wb: the touched words only, as a unigram model
    last = getattr(_LAST, "windows", None)
    if last is not None and last[0] is texts and last[1] is edits and last[2] == cut:
        return last[3]
    if context:
        pre, tok = vectorizer.build_preprocessor(), vectorizer.build_tokenizer()
        tokens = lambda w: tok(pre(w))  # noqa: E731
    else:
        tokens = lambda w: ()  # noqa: E731
    windows: list[str] = []
    owner: list[int] = []
    sign: list[float] = []
    for k, (i, spans) in enumerate(edits):
        text = texts[i]
        kept = kept_spans(spans)
        for a, b in _windows(text, kept, context, tokens):
            inside = [(s - a, e - a, r) for s, e, r in kept if a <= s and e <= b]
            windows += [text[a:b], replaced_text(text[a:b], inside)]
            owner += [k, k]
            sign += [-1.0, 1.0]
    _LAST.windows = (texts, edits, cut, (windows, owner, sign))  # holds both: ids never reused
    return windows, owner, sign
