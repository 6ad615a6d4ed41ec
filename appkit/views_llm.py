"""The optional LLM attacker on the Check page (SPEC §8, ``neswap_core.measure.llm``).

Off until the analyst names an OpenAI-compatible endpoint and a model and confirms what will be
sent; the API key lives in the browser session only (never in the workspace or run.toml). Only
the passages the release changed (before and after) and the released documents are sent, as
the CLI's ``evaluate --llm`` does; answers are cached on disk, so a rerun sends nothing new.
"""

from __future__ import annotations

from neswap_core.measure.llm import (
    LLMAttacker,
    LLMSettings,
    company_candidates,
    llm_release_measures,
)
from neswap_core.publish.export import document_texts

from .pipeline import CACHE_DIR
from .views_check import pct


def llm_settings(url: str, model: str, api_key: str, requests_per_minute: float) -> LLMSettings:
    """Settings from the page's fields (answers cached beside the other caches)."""
    return LLMSettings(url=url.strip(), model=model.strip(), api_key=api_key.strip(),
                       requests_per_minute=float(requests_per_minute),
                       cache_path=str(CACHE_DIR / "llm" / "answers.jsonl"))


def what_is_sent(changed: dict[int, str], n_documents: int) -> str:
    """The confirmation's wording: how many texts of which kind."""
    return (f"{len(changed)} changed passage(s), each before and after the release, and the "
            f"{n_documents} released document(s)")


def run_llm_attack(stage, release, changed: dict[int, str], settings: LLMSettings) -> dict:
    """The LLM's Tables 2/3 on the changed passages and its document accuracy (confirmed)."""
    clean = stage.clean().corpus
    base = release.sweep.ctx.chunks
    texts = document_texts(clean, release.released_chunks())
    documents = {d.doc_id: (texts.get(d.doc_id, ""), clean.protected_value(d))
                 for d in clean.documents}
    attacker = LLMAttacker(settings, company_candidates(clean), confirm=True)
    return llm_release_measures(attacker, [c.text for c in base], changed,
                                [c.protected for c in base], documents)


def llm_sentence(result: dict) -> str:
    """E.g. "The LLM (gpt-x) named the company of 60 % of the 5 changed passages before ..."."""
    text = (f"The LLM ({result['model']}) named the company of "
            f"{pct(result['changed_pre_top1'])} of the {result['n_changed']} changed passages "
            f"before the release and {pct(result['changed_post_top1'])} after")
    if result.get("n_documents"):
        text += (f"; reading whole released documents it named {pct(result['document_accuracy'])}"
                 f" of {result['n_documents']}")
    return text + f" ({result['requests_sent']} new request(s); the rest came from the cache)."
