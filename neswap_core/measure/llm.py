"""The optional LLM attacker (SPEC §8): an OpenAI-compatible chat endpoint guesses the ticker.

Off by default. Settings (``LLMSettings``): endpoint URL, model and key, from arguments or the
environment (``NESWAP_LLM_URL``, ``NESWAP_LLM_MODEL``, ``NESWAP_LLM_API_KEY``). Nothing is sent
unless the settings name an endpoint and a model **and** the caller confirms (``confirm=True``;
the CLI's ``--confirm-llm``): released text leaves the machine only on the analyst's word.

* the paper's prompt, verbatim (``PROMPT``) as the system message, the passage as the user
  message, temperature 0;
* answers matched to tickers and aliases (``match_answer``: case-insensitive, punctuation
  stripped; the whole answer first, then its words);
* retries with exponential backoff on HTTP 429 and 5xx (``Retry-After`` honoured), then an
  ``AttackError``; a rate limit of ``requests_per_minute``;
* a cache on disk by hash of (model, prompt, text), one JSON object per line, appended after
  every answer: an interrupted run resumes where it stopped and a rerun sends nothing.
Only the standard library (``urllib``) talks HTTP.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import AttackError, ConfigError
from ..paths import default_cache_dir

PROMPT = (
    "You are tasked to guess the company name of the following earnings call transcript using "
    "the content of the text. Reply ONLY with the ticker symbol (in Capital Letters) of your best "
    "guess. DO NOT output anything other than that."
)
ENV_URL, ENV_MODEL, ENV_KEY = "NESWAP_LLM_URL", "NESWAP_LLM_MODEL", "NESWAP_LLM_API_KEY"
_PUNCT = re.compile(r"[^\w\s]")


@dataclass(frozen=True)
class LLMSettings:
    """Where and how to ask. ``requests_per_minute`` > 0; ``max_retries`` ≥ 0; seconds for the rest."""

    url: str = ""
    model: str = ""
    api_key: str = ""
    requests_per_minute: float = 60.0
    max_retries: int = 5
    backoff: float = 1.0
    timeout: float = 60.0
    cache_path: str = ""  # "": llm/answers.jsonl in the cache folder (neswap_core.paths)

    @classmethod
    def from_env(cls, **overrides) -> LLMSettings:
        """Settings from the environment, overridden by non-empty keyword arguments."""
        base: dict[str, Any] = {"url": os.environ.get(ENV_URL, ""),
                                   "model": os.environ.get(ENV_MODEL, ""),
                                   "api_key": os.environ.get(ENV_KEY, "")}  # fmt: skip
        base.update({k: v for k, v in overrides.items() if v not in (None, "")})
        return cls(**base)

    @property
    def enabled(self) -> bool:
        return bool(self.url and self.model)

    @property
    def endpoint(self) -> str:
        url = self.url.rstrip("/")
        return url if url.endswith("/chat/completions") else url + "/chat/completions"

    @property
    def stays_on_this_machine(self) -> bool:
        """True when the endpoint is this machine (loopback): nothing leaves it."""
        import ipaddress
        from urllib.parse import urlparse

        host = (urlparse(self.url).hostname or "").lower()
        if host == "localhost":
            return True
        try:
            return ipaddress.ip_address(host).is_loopback
        except ValueError:
            return False


def normalise(text: str) -> str:
    """Upper case, punctuation removed, whitespace collapsed."""
    return " ".join(_PUNCT.sub(" ", str(text)).upper().split())


def match_answer(answer: str, candidates: Mapping[str, Sequence[str]]) -> str | None:
    """The company whose ticker/alias the answer names (``candidates``: company → names)."""
    table = {normalise(n): company for company, names in candidates.items()
             for n in (company, *names) if normalise(n)}  # fmt: skip
    said = normalise(answer)
    if said in table:
        return table[said]
    for word in said.split():
        if word in table:
            return table[word]
    return None


class LLMAttacker:
    """Ask an OpenAI-compatible endpoint for each text's ticker (module docstring)."""

    def __init__(
        self,
        settings: LLMSettings,
        candidates: Mapping[str, Sequence[str]],
        *,
        confirm: bool = False,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not settings.enabled:
            raise ConfigError(
                f"The LLM attacker is off: set {ENV_URL} and {ENV_MODEL} (and {ENV_KEY} if the "
                "endpoint needs one) or pass url and model."
            )
        if not confirm:
            raise ConfigError(
                f"The LLM attacker would send released text to {settings.endpoint}; confirm "
                "first (confirm=True, or --confirm-llm on the command line)."
            )
        if settings.requests_per_minute <= 0 or settings.max_retries < 0:
            raise ConfigError("requests_per_minute must be > 0 and max_retries >= 0.")
        self.settings, self.candidates = settings, dict(candidates)
        self._sleep, self._clock = sleep, clock
        self._last: float | None = None  # clock time of the last request
        self.requests_sent = 0
        self.cache_path = (
            Path(settings.cache_path) if settings.cache_path
            else default_cache_dir() / "llm" / "answers.jsonl"
        )
        self.cache = self._load_cache()

    def _key(self, text: str) -> str:
        payload = json.dumps([self.settings.model, PROMPT, text], ensure_ascii=False)
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()

    def _load_cache(self) -> dict[str, str]:
        cache: dict[str, str] = {}
        if self.cache_path.is_file():
            for line in self.cache_path.read_text(encoding="utf-8").splitlines():
                try:
                    row = json.loads(line)
                    cache[row["key"]] = row["answer"]
                except (json.JSONDecodeError, KeyError, TypeError):
                    continue  # a line cut by an interrupted run: ask again
        return cache

    def _remember(self, key: str, answer: str) -> None:
        self.cache[key] = answer
        self.cache_path.parent.mkdir(parents=True, exist_ok=True)
        with self.cache_path.open("a", encoding="utf-8") as fh:
            fh.write(
                json.dumps({"key": key, "model": self.settings.model, "answer": answer}) + "\n"
            )

    def _wait_turn(self) -> None:
        interval = 60.0 / self.settings.requests_per_minute
        if self._last is not None:
            wait = self._last + interval - self._clock()
            if wait > 0:
                self._sleep(wait)
        self._last = self._clock()

    def _post(self, text: str) -> str:
        body = json.dumps({"model": self.settings.model, "temperature": 0, "messages": [
            {"role": "system", "content": PROMPT}, {"role": "user", "content": text}]}).encode()  # fmt: skip
        headers = {"Content-Type": "application/json"}
        if self.settings.api_key:
            headers["Authorization"] = f"Bearer {self.settings.api_key}"
        for attempt in range(self.settings.max_retries + 1):
            self._wait_turn()
            self.requests_sent += 1
            request = urllib.request.Request(self.settings.endpoint, body, headers, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=self.settings.timeout) as resp:
                    data = json.loads(resp.read().decode("utf-8"))
                return str(data["choices"][0]["message"]["content"]).strip()
            except urllib.error.HTTPError as exc:
                if exc.code != 429 and exc.code < 500:
                    raise AttackError(f"The LLM endpoint refused the request: HTTP {exc.code} "
                                      f"{exc.reason}. Check the URL, model and key.") from None  # fmt: skip
                if attempt == self.settings.max_retries:
                    raise AttackError(f"The LLM endpoint kept answering HTTP {exc.code} after "
                                      f"{attempt + 1} tries; rerun later (answers so far are "
                                      "cached).") from None  # fmt: skip
                retry_after = exc.headers.get("Retry-After") if exc.headers else None
                delay = self.settings.backoff * 2**attempt
                if retry_after and retry_after.replace(".", "", 1).isdigit():
                    delay = max(delay, float(retry_after))
                self._sleep(delay)
            except (urllib.error.URLError, TimeoutError, OSError) as exc:
                raise AttackError(f"Cannot reach the LLM endpoint {self.settings.endpoint}: "
                                  f"{exc}.") from None  # fmt: skip
            except (KeyError, IndexError, TypeError, json.JSONDecodeError):
                raise AttackError("The LLM endpoint's answer is not an OpenAI chat completion "
                                  "(no choices[0].message.content).") from None  # fmt: skip
        raise AttackError("unreachable")  # pragma: no cover

    def answer(self, text: str) -> str:
        """The raw answer for ``text`` (from the cache when asked before)."""
        key = self._key(text)
        if key not in self.cache:
            self._remember(key, self._post(text))
        return self.cache[key]

    def predict(self, texts: Sequence[str]) -> list[str | None]:
        """The company each text is attributed to (None when the answer names no candidate)."""
        return [match_answer(self.answer(t), self.candidates) for t in texts]


def company_candidates(corpus) -> dict[str, tuple[str, ...]]:
    """{protected value: its documents' aliases}: the answers an LLM attacker's reply is matched
    against (measure/llm.py ``match_answer``)."""
    candidates: dict[str, tuple[str, ...]] = {}
    for d in corpus.documents:
        value = corpus.protected_value(d)
        candidates[value] = tuple(dict.fromkeys([*candidates.get(value, ()), *d.aliases]))
    return candidates


def llm_accuracy(attacker: LLMAttacker, texts: Sequence[str], labels: Sequence[str]) -> float:
    """Share of texts whose company the LLM names (chunk or document accuracy, by the texts)."""
    if not texts:
        return float("nan")
    guesses = attacker.predict(texts)
    return sum(g == y for g, y in zip(guesses, labels, strict=True)) / len(texts)


def llm_release_measures(
    attacker: LLMAttacker,
    pre_texts: Sequence[str],
    changed: Mapping[int, str],
    labels: Sequence[str],
    documents: Mapping[str, tuple[str, str]] | None = None,
) -> dict:
    """The LLM's Table 2/3 on the changed chunks (pre vs post, 2×2 table, exact McNemar) and,
    given ``documents`` (doc id → (released text, company)), its document accuracy: the paper's
    reading of whole transcripts. Only changed chunks and documents are sent."""
    import numpy as np

    from .attack_scores import mcnemar_exact

    positions = sorted(p for p, t in changed.items() if t != pre_texts[p])
    truth = [labels[p] for p in positions]
    pre = attacker.predict([pre_texts[p] for p in positions])
    post = attacker.predict([changed[p] for p in positions])
    pre_ok = np.array([g == y for g, y in zip(pre, truth, strict=True)], dtype=bool)
    post_ok = np.array([g == y for g, y in zip(post, truth, strict=True)], dtype=bool)
    table = np.array([[np.sum(pre_ok & post_ok), np.sum(pre_ok & ~post_ok)],
                      [np.sum(~pre_ok & post_ok), np.sum(~pre_ok & ~post_ok)]])  # fmt: skip
    out = {
        "attacker": "llm", "model": attacker.settings.model, "n_changed": len(positions),
        "changed_pre_top1": float(pre_ok.mean()) if positions else None,
        "changed_post_top1": float(post_ok.mean()) if positions else None,
        "table": table.tolist(), "mcnemar_p": mcnemar_exact(table),
    }  # fmt: skip
    if documents:
        texts = [t for t, _ in documents.values()]
        out["document_accuracy"] = llm_accuracy(attacker, texts, [c for _, c in documents.values()])
        out["n_documents"] = len(documents)
    out["requests_sent"] = attacker.requests_sent
    return out
