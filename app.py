"""neswap dashboard: navigation over the workflow pages and a shared sidebar (nothing else).

The page icon is a local file and the page icons are Streamlit's material icons (drawn from the
font Streamlit ships): nothing is fetched from a font or icon CDN, and no emoji font is needed
(issues 13, 20). The sidebar's summary is drawn *after* the page ran (into a slot made before),
so it shows what the page's actions just did, never the state of the run before (issue 20).
"""

from pathlib import Path

import streamlit as st
from streamlit.runtime.scriptrunner_utils.exceptions import StopException

ICON = Path(__file__).resolve().parent / "assets" / "neswap-icon.png"
st.set_page_config(page_title="neswap — named entity swapping", page_icon=str(ICON), layout="wide")

PAGES = [
    st.Page("pages/1_corpus.py", title="1 · Corpus", icon=":material/description:", default=True),
    st.Page("pages/2_entities.py", title="2 · Entities & roles", icon=":material/label:"),
    st.Page("pages/3_clusters.py", title="3 · Clusters", icon=":material/hub:"),
    st.Page("pages/4_swaps.py", title="4 · Swaps", icon=":material/swap_horiz:"),
    st.Page("pages/5_frontier.py", title="5 · Risk–utility frontier", icon=":material/balance:"),
    st.Page("pages/6_export.py", title="6 · Export", icon=":material/inventory_2:"),
    st.Page("pages/7_check.py", title="7 · Check", icon=":material/shield:"),
]

navigation = st.navigation(PAGES)

with st.sidebar:
    st.markdown("**neswap** anonymises a corpus by swapping named entities between similar "
                "passages of different documents. Work through the pages in order; your "
                "choices are saved in the workspace.")
    slot = st.container()


def summary() -> None:
    from appkit.sidebar import state_summary

    with slot:
        state_summary()


try:
    navigation.run()
except StopException:  # a page that stopped early still gets its summary
    summary()
    raise
summary()
