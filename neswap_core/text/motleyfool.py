"""Motley Fool JSON calls rendered as fool.com text (``Prepared Remarks:``, ``Name -- Title``).

The loader keeps the JSON's own split: ``prepared_remarks`` become ``Document.text`` in the
fool.com text layout, so presentation extraction and people detection read it like any Motley
Fool transcript, and ``q_and_a`` is kept apart for display.
"""

from __future__ import annotations

from ..errors import CorpusError
from .participants import Participant, is_company_side, parse_participant


def _render_turns(turns: object, roles: dict[str, str], name: str, key: str) -> str:
    """Motley Fool turns rendered as fool.com text: ``Name -- Role`` line, blank line, speech."""
    if not isinstance(turns, list):
        raise CorpusError(f"{name}: {key!r} must be a list of {{speaker, speech}} turns.")
    parts = []
    for turn in turns:
        if not isinstance(turn, dict):
            raise CorpusError(f"{name}: every turn in {key!r} must have 'speaker' and 'speech'.")
        speaker, speech = str(turn.get("speaker", "")).strip(), str(turn.get("speech", "")).strip()
        if not speech:
            continue  # e.g. the "Duration: 58 minutes" pseudo-turn
        if speaker.lower() == "operator":
            parts.append(f"Operator\n\n{speech}")
        elif speaker:
            parts.append(f"{speaker} -- {roles.get(speaker) or 'Call Participant'}\n\n{speech}")
        else:
            parts.append(speech)
    return "\n\n".join(parts)


def render_motleyfool(obj: dict, name: str) -> tuple[str, str, list[Participant]]:
    """A Motley Fool JSON call as (prepared remarks text, Q&A text, participants).

    Both texts use the fool.com rendering (``Prepared Remarks:`` heading, ``Name -- Role`` speaker
    lines); presenters missing from ``participants`` are added as company-side.
    """
    entries = obj.get("participants") or []
    if not isinstance(entries, list):
        raise CorpusError(f"{name}: 'participants' must be a list of 'Name--Role' strings.")
    participants = [parse_participant(str(e)) for e in entries if str(e).strip()]
    roles = {p.name: p.role for p in participants}
    prepared = _render_turns(obj.get("prepared_remarks"), roles, name, "prepared_remarks")
    if not prepared.strip():
        raise CorpusError(f"{name} has no prepared remarks (empty 'prepared_remarks').")
    q_and_a = _render_turns(obj.get("q_and_a") or [], roles, name, "q_and_a")
    known = {p.name for p in participants}
    for turn in obj["prepared_remarks"]:
        speaker = str(turn.get("speaker", "")).strip()
        if speaker and speaker not in known and is_company_side(speaker, ""):
            participants.append(Participant(speaker, "", True))
            known.add(speaker)
    q_and_a = ("Questions and Answers:\n\n" + q_and_a) if q_and_a else ""
    return "Prepared Remarks:\n\n" + prepared, q_and_a, participants
