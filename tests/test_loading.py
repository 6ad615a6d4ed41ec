"""Loading corpora: folders + manifest, tables, Motley Fool JSON, uploads, and every bad input."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from neswap_core.errors import CorpusError
from neswap_core.text.loading import check_swappable, decode_text, load_corpus, load_uploaded

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "data" / "sample"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
SHARED = ROOT.parent / "shared" / "corpus"

MANIFEST = "doc_id,ticker,company,quarter\nAAA_q1_2024,AAA,Alpha Widgets Inc.,q1_2024\n"
MANIFEST += "BBB_q1_2024,BBB,Beta Foods Corporation,q1_2024\n"


def _folder(tmp_path: Path, manifest: str | None = MANIFEST, sub: str = "") -> Path:
    """A two-document corpus: AAA_q1_2024.txt, BBB_q1_2024.txt (+ manifest.csv)."""
    docs = tmp_path / sub if sub else tmp_path
    docs.mkdir(parents=True, exist_ok=True)
    (docs / "AAA_q1_2024.txt").write_text("Alpha Widgets grew.\nAlpha had a record year.\n")
    (docs / "BBB_q1_2024.txt").write_text("Beta Foods shipped more soup.\n")
    if manifest is not None:
        (tmp_path / "manifest.csv").write_text(manifest)
    return tmp_path


# --- the bundled corpus -----------------------------------------------------------------------
def test_bundled_sample_loads_with_manifest_aliases_and_executives():
    corpus = load_corpus(SAMPLE)
    manifest = pd.read_csv(SAMPLE / "manifest.csv", dtype=str, keep_default_na=False)
    assert corpus.doc_ids == sorted(manifest["doc_id"])
    assert corpus.protect == "company"
    with open(SAMPLE / "executives.csv", newline="", encoding="utf-8") as handle:
        listed = list(csv.DictReader(handle))
    for doc in corpus.documents:
        row = manifest.set_index("doc_id").loc[doc.doc_id]
        assert doc.metadata == {"doc_id": doc.doc_id, **row.to_dict()}  # every column kept
        assert doc.metadata["company"] in doc.aliases and doc.metadata["ticker"] in doc.aliases
        expected = [r["name"] for r in listed if r["ticker"] == doc.metadata["ticker"]]
        assert list(doc.executives) == expected  # csv order: [Executive #] indices
        assert doc.text.strip() and "\r" not in doc.text and doc.layout == "text"
    assert sum(len(d.executives) for d in corpus.documents) == len(listed) == 32
    check_swappable(corpus)  # 10 different companies


def test_bundled_sample_has_attribution_and_licence():
    attribution = (SAMPLE / "ATTRIBUTION.md").read_text(encoding="utf-8")
    for needed in ("ECTSum", "EMNLP 2022", "rajdeep345/ECTSum", "GPL-3.0", "Motley Fool"):
        assert needed in attribution
    assert "GNU GENERAL PUBLIC LICENSE" in (SAMPLE / "LICENSE-ECTSum.txt").read_text()
    assert len(list((SAMPLE / "docs").glob("*.txt"))) == 10


# --- folders ----------------------------------------------------------------------------------
def test_folder_flat_and_docs_subfolder_give_the_same_corpus(tmp_path):
    flat = load_corpus(_folder(tmp_path / "flat"))
    nested = load_corpus(_folder(tmp_path / "nested", sub="docs"))
    assert [(d.doc_id, d.text, d.metadata) for d in flat.documents] == [
        (d.doc_id, d.text, d.metadata) for d in nested.documents
    ]
    assert flat.documents[0].metadata["company"] == "Alpha Widgets Inc."
    assert "Alpha Widgets" in flat.documents[0].aliases  # derived from the company name
    assert "AAA" in flat.documents[0].aliases


def test_licence_and_readme_text_files_are_not_documents(tmp_path):
    folder = _folder(tmp_path)
    (folder / "LICENSE.txt").write_text("GPL")
    (folder / "README.txt").write_text("about")
    assert len(load_corpus(folder)) == 2


def test_bom_crlf_and_utf16_are_accepted(tmp_path):
    folder = _folder(tmp_path)
    (folder / "AAA_q1_2024.txt").write_bytes("\ufeffAlpha caf\u00e9\r\nline two\r\n".encode())
    (folder / "BBB_q1_2024.txt").write_bytes("Beta \u00fcber\n".encode("utf-16"))
    texts = {d.doc_id: d.text for d in load_corpus(folder).documents}
    assert texts["AAA_q1_2024"] == "Alpha caf\u00e9\nline two\n"
    assert texts["BBB_q1_2024"] == "Beta \u00fcber\n"
    assert decode_text("\ufeffx".encode(), "x.txt") == "x"


@pytest.mark.parametrize("codec", ["utf-16-le", "utf-16-be"])
def test_utf16_without_a_bom_is_read_not_called_binary(tmp_path, codec):
    """Issue 23 item 11: a Windows "Unicode" export without its BOM was "a binary file (PDF,
    Word…)"."""
    folder = _folder(tmp_path)
    text = "Beta \u00fcber alles: revenue grew 12% \u2014 \u201cstrong\u201d.\nLine two\n" * 3
    (folder / "BBB_q1_2024.txt").write_bytes(text.encode(codec))
    assert {d.doc_id: d.text for d in load_corpus(folder).documents}["BBB_q1_2024"] == text
    assert decode_text("x".encode(codec), "x.txt") == "x"
    broken = text.encode(codec)[:-1]  # an odd number of bytes: broken UTF-16, said so
    with pytest.raises(CorpusError, match="broken UTF-16"):
        decode_text(broken, "b.txt")


@pytest.mark.parametrize(
    ("data", "words"),
    [
        ("caf\u00e9 cr\u00e8me".encode("cp1252"), ["BBB_q1_2024.txt", "UTF-8"]),
        (bytes(range(256)) * 8, ["BBB_q1_2024.txt", "binary"]),  # zeros on both sides
        (b"%PDF-1.4\x00\x01\x02binary", ["BBB_q1_2024.txt", "binary"]),
        (b"", ["BBB_q1_2024.txt", "empty"]),
        (b"  \n\t\n", ["BBB_q1_2024.txt", "empty"]),
    ],
)
def test_bad_files_name_the_file_and_say_what_to_do(tmp_path, data, words):
    folder = _folder(tmp_path)
    (folder / "BBB_q1_2024.txt").write_bytes(data)
    with pytest.raises(CorpusError) as info:
        load_corpus(folder)
    for word in words:
        assert word in str(info.value)


def test_manifest_and_files_must_match_both_ways(tmp_path):
    folder = _folder(tmp_path, MANIFEST + "CCC_q1_2024,CCC,Gamma Ltd,q1_2024\n")
    with pytest.raises(CorpusError, match=r"have no file: \[.CCC_q1_2024.\]"):
        load_corpus(folder)
    folder = _folder(tmp_path / "b", "doc_id,company\nAAA_q1_2024,Alpha\n")
    with pytest.raises(CorpusError, match=r"no row in manifest.csv.*BBB_q1_2024"):
        load_corpus(folder)


def test_duplicate_ids_are_refused(tmp_path):
    folder = _folder(tmp_path, MANIFEST + "AAA_q1_2024,AAA,Alpha again,q1_2024\n")
    with pytest.raises(CorpusError, match="more than once.*AAA_q1_2024"):
        load_corpus(folder)
    folder = _folder(tmp_path / "b", sub="docs")
    (folder / "AAA_q1_2024.txt").write_text("also at the top")
    with pytest.raises(CorpusError, match="AAA_q1_2024.txt is both in"):
        load_corpus(folder)
    table = tmp_path / "t.csv"
    table.write_text("doc_id,company,text\nx,A,hello\nx,B,world\n")
    with pytest.raises(CorpusError, match="Duplicate doc id 'x'"):
        load_corpus(table)


def test_missing_protect_column_lists_columns_and_missing_manifest_says_add_one(tmp_path):
    with pytest.raises(CorpusError) as info:
        load_corpus(_folder(tmp_path), protect="sector")
    assert "'sector'" in str(info.value) and "company" in str(info.value)
    with pytest.raises(CorpusError, match="add one with columns 'doc_id' and 'company'"):
        load_corpus(_folder(tmp_path / "nomanifest", manifest=None))


def test_without_manifest_ticker_and_quarter_come_from_the_file_stem(tmp_path):
    corpus = load_corpus(_folder(tmp_path, manifest=None), protect="ticker")
    assert [d.metadata for d in corpus.documents] == [
        {"doc_id": "AAA_q1_2024", "ticker": "AAA", "quarter": "q1_2024"},
        {"doc_id": "BBB_q1_2024", "ticker": "BBB", "quarter": "q1_2024"},
    ]
    check_swappable(corpus)


def test_empty_and_missing_paths(tmp_path):
    with pytest.raises(CorpusError, match="No transcripts"):
        load_corpus(tmp_path)
    with pytest.raises(CorpusError, match="does not exist"):
        load_corpus(tmp_path / "nope")
    (tmp_path / "manifest.csv").write_text(MANIFEST)
    with pytest.raises(CorpusError, match="no .txt transcripts"):
        load_corpus(tmp_path)


# --- swappability -----------------------------------------------------------------------------
def test_single_document_loads_but_is_not_swappable(tmp_path):
    folder = _folder(tmp_path)
    (folder / "BBB_q1_2024.txt").unlink()
    single = load_corpus(folder / "AAA_q1_2024.txt")  # manifest beside it: used as a subset
    assert len(single) == 1 and single.documents[0].metadata["ticker"] == "AAA"
    with pytest.raises(CorpusError, match="at least 2 documents"):
        check_swappable(single)


def test_same_protected_value_everywhere_is_not_swappable(tmp_path):
    folder = _folder(tmp_path, "doc_id,company\nAAA_q1_2024,Same\nBBB_q1_2024,Same\n")
    corpus = load_corpus(folder)
    with pytest.raises(CorpusError, match="same 'company'"):
        check_swappable(corpus)
    check_swappable(load_corpus(folder, protect="doc_id"))


# --- side tables ------------------------------------------------------------------------------
def test_aliases_and_executives_attach_by_ticker_and_quarter(tmp_path):
    folder = _folder(tmp_path)
    (folder / "aliases.csv").write_text(
        'ticker,company_name,aliases\nAAA,"Alpha Widgets, Inc.",Alpha|alphawidgets.com|AAA\n'
    )
    (folder / "executives.csv").write_text(
        "ticker,quarter,name,role\n"
        "AAA,q1_2024,Jo Ann Smith,Chief Executive Officer\n"
        "AAA,q2_2024,Old Timer,Chief Financial Officer\n"  # another quarter
        "AAA,q1_2024,Pat Jones,Analyst\n"  # not company-side
        "AAA,q1_2024,Unknown speaker,\n"
        "AAA,q1_2024,Lee Park,Vice President of Investor Relations\n"
    )
    doc_a, doc_b = load_corpus(folder).documents
    assert doc_a.executives == ("Jo Ann Smith", "Lee Park")
    assert {"Alpha", "alphawidgets.com", "Alpha Widgets, Inc.", "Alpha Widgets Inc."} <= set(
        doc_a.aliases
    )
    assert doc_b.executives == () and "Alpha" not in doc_b.aliases


# --- tables -----------------------------------------------------------------------------------
def test_csv_and_jsonl_tables(tmp_path):
    rows = [
        {"doc_id": "a", "company": "Alpha Inc.", "text": "Alpha sells.", "aliases": "AlphaX"},
        {"doc_id": "b", "company": "Beta plc", "text": "Beta buys.", "executives": "Ann Lee"},
    ]
    pd.DataFrame(rows).to_csv(tmp_path / "t.csv", index=False)
    (tmp_path / "t.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    for name in ("t.csv", "t.jsonl"):
        corpus = load_corpus(tmp_path / name)
        a, b = corpus.documents
        assert (a.doc_id, a.text, a.layout) == ("a", "Alpha sells.", "table")
        assert "text" not in a.metadata and a.metadata["company"] == "Alpha Inc."
        assert "AlphaX" in a.aliases and b.executives == ("Ann Lee",)


def test_table_errors(tmp_path):
    table = tmp_path / "t.csv"
    table.write_text("id,company,body\n1,A,hello\n")
    with pytest.raises(CorpusError, match=r"no column 'text'.*\['id', 'company', 'body'\]"):
        load_corpus(table)
    corpus = load_corpus(table, text_column="body")
    assert corpus.doc_ids == ["doc_0001"]  # no doc_id column: numbered rows
    assert load_corpus(table, text_column="body", id_column="id").doc_ids == ["1"]
    table.write_text("doc_id,company,text\n1,A,hello\n2,B,\n")
    with pytest.raises(CorpusError, match=r"row 2 \('2'\) is empty"):
        load_corpus(table)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"doc_id": "a", "text": "x"}\n{oops\n')
    with pytest.raises(CorpusError, match="line 2"):
        load_corpus(bad)


# --- Motley Fool JSON -------------------------------------------------------------------------
def test_motleyfool_json_fixture(tmp_path):
    shutil.copy(FIXTURES / "quillfeather_call.json", tmp_path / "QFR_q2_2024.json")
    (tmp_path / "manifest.csv").write_text(
        "doc_id,ticker,company,quarter\nQFR_q2_2024,QFR,Quillfeather Robotics Inc.,q2_2024\n"
    )
    (doc,) = load_corpus(tmp_path / "QFR_q2_2024.json").documents
    assert doc.layout == "motleyfool" and doc.metadata["company"] == "Quillfeather Robotics Inc."
    # company side in participant order, the unlisted presenter last; no analyst, no investor
    assert doc.executives == ("Priya Natarajan", "Dana M. Whitlock", "Robert Okafor", "Lena Osei")
    assert doc.text.startswith("Prepared Remarks:\n\nOperator\n\n")
    assert "Priya Natarajan -- Vice President, Investor Relations" in doc.text
    assert "Tom Berringer" not in doc.text and "Tom Berringer -- Halvorsen" in doc.q_and_a
    assert "Duration" not in doc.q_and_a  # the empty pseudo-turn is skipped


def test_json_folder_and_bad_json(tmp_path):
    for ticker in ("QFR", "ZZZ"):
        shutil.copy(FIXTURES / "quillfeather_call.json", tmp_path / f"{ticker}_q2_2024.json")
    corpus = load_corpus(tmp_path, protect="ticker")
    assert corpus.doc_ids == ["QFR_q2_2024", "ZZZ_q2_2024"]
    (tmp_path / "bad.json").write_text('{"speaker": 1}')
    with pytest.raises(CorpusError, match="neither a Motley Fool transcript"):
        load_corpus(tmp_path, protect="ticker")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(CorpusError, match="bad.json is not valid JSON"):
        load_corpus(tmp_path, protect="ticker")
    (tmp_path / "bad.json").unlink()
    (tmp_path / "QFR_q2_2024.txt").write_text("text too")
    with pytest.raises(CorpusError, match="both .txt"):
        load_corpus(tmp_path, protect="ticker")


# --- uploads ----------------------------------------------------------------------------------
def test_load_uploaded_matches_load_corpus(tmp_path):
    folder = _folder(tmp_path)
    uploads = [(p.name, p.read_bytes()) for p in sorted(folder.iterdir())]
    from_upload = load_uploaded(uploads)
    from_disk = load_corpus(folder)
    assert [(d.doc_id, d.text, d.metadata, d.aliases) for d in from_upload.documents] == [
        (d.doc_id, d.text, d.metadata, d.aliases) for d in from_disk.documents
    ]
    table = [("corpus.csv", b"doc_id,company,text\na,A,x\nb,B,y\n")]
    assert load_uploaded(table).doc_ids == ["a", "b"]
    call = (FIXTURES / "quillfeather_call.json").read_bytes()
    assert load_uploaded([("QFR_q2_2024.json", call)], protect="ticker").doc_ids == ["QFR_q2_2024"]


def test_load_uploaded_errors():
    with pytest.raises(CorpusError, match="No files uploaded"):
        load_uploaded([])
    with pytest.raises(CorpusError, match="named 'a.txt'"):
        load_uploaded([("x/a.txt", b"one"), ("y/a.txt", b"two")])
    with pytest.raises(CorpusError, match="a.txt is not UTF-8"):
        load_uploaded([("a.txt", "caf\u00e9".encode("cp1252")), ("manifest.csv", b"doc_id\na\n")])
    with pytest.raises(CorpusError, match="several CSV files"):
        load_uploaded([("a.txt", b"x"), ("one.csv", b"doc_id\na\n"), ("two.csv", b"doc_id\n")])


# --- the shared corpora (skipped when absent) -------------------------------------------------
needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason="shared corpus not available")


@needs_shared
def test_shared_dev_corpus_loads():
    corpus = load_corpus(SHARED / "dev")
    assert len(corpus) == 35 and len({corpus.protected_value(d) for d in corpus.documents}) == 35
    with_execs = sum(1 for d in corpus.documents if d.executives)
    assert with_execs == 21  # executives.csv covers 21 of the 35 calls


@needs_shared
def test_shared_motleyfool_json_participants_match_executives_csv(tmp_path):
    for path in (SHARED / "full" / "motleyfool").glob("*.json"):
        shutil.copy(path, tmp_path / path.name)
    corpus = load_corpus(tmp_path, protect="ticker")
    assert len(corpus) == 10
    with open(SHARED / "dev" / "executives.csv", newline="", encoding="utf-8") as handle:
        listed = list(csv.DictReader(handle))
    for doc in corpus.documents:
        expected = {r["name"] for r in listed if r["ticker"] == doc.metadata["ticker"]}
        assert set(doc.executives) == expected, doc.doc_id
        # the JSON rendering reproduces the fool.com text layout of the same call
        txt = (SHARED / "full" / "motleyfool" / f"{doc.doc_id}.txt").read_text(encoding="utf-8")
        prepared = txt[: txt.index("\nQuestions and Answers:")]
        assert doc.text.split() == prepared.split()
