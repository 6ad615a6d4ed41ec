"""Bytes of an input file as text (SPEC §1): UTF-8, or UTF-16 with or without a byte-order mark.

Text must be UTF-8 (a BOM is stripped) or UTF-16 (with a BOM, or without one when one byte of
each pair is mostly zero, as Windows "Unicode" exports are; issue 23 item 11). Anything else is a
``CorpusError`` naming the file: there is no silent cp1252 fallback, because a wrong guess
produces mojibake that no later stage can detect. Line ends become ``\n``.
"""

from __future__ import annotations

from ..errors import CorpusError


def utf16_without_bom(data: bytes) -> str | None:
    """``"utf-16-le"`` / ``"utf-16-be"`` when ``data`` reads as UTF-16 without a byte-order mark:
    in its first 8 kB at least 30 % of the bytes on one side of each pair are zero (the high
    byte of Latin characters) and almost none (≤ 5 %) on the other; None otherwise. A PDF, Word
    file or archive has zeros scattered on both sides."""
    sample = data[: min(len(data), 8192) // 2 * 2]
    if len(sample) < 2:
        return None
    even, odd = sample[0::2], sample[1::2]
    zeros_even, zeros_odd = even.count(0) / len(even), odd.count(0) / len(odd)
    if zeros_odd >= 0.3 and zeros_even <= 0.05:
        return "utf-16-le"
    if zeros_even >= 0.3 and zeros_odd <= 0.05:
        return "utf-16-be"
    return None


def decode_text(data: bytes, name: str) -> str:
    """Decode UTF-8 (BOM stripped) or UTF-16 (with a BOM, or recognised without one:
    ``utf16_without_bom``); clear ``CorpusError`` otherwise."""
    codec = "utf-16" if data.startswith((b"\xff\xfe", b"\xfe\xff")) else utf16_without_bom(data)
    if codec:
        try:
            text = data.decode(codec).lstrip("\ufeff")
        except UnicodeDecodeError as exc:
            raise CorpusError(
                f"{name}: broken UTF-16 text ({exc.reason}); re-save it as UTF-8."
            ) from None
    else:
        if b"\x00" in data[:8192]:
            raise CorpusError(
                f"{name} looks like a binary file (PDF, Word, archive?), not plain text. "
                "Export the transcript as a UTF-8 .txt file."
            )
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise CorpusError(
                f"{name} is not UTF-8 text (undecodable byte 0x{data[exc.start]:02x} at offset "
                f"{exc.start}). Re-save it as UTF-8 (e.g. 'Save as… > UTF-8' in your editor)."
            ) from None
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if not text.strip():
        raise CorpusError(f"{name} is empty. Remove it or add its text.")
    return text
