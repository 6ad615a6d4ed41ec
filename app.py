"""neswap dashboard: navigation over the workflow pages and a shared sidebar (nothing else).

The page icon is a local file and the page icons are emoji: nothing is fetched from a font or
icon CDN when the app is opened (issue 13).
"""

from pathlib import Path

import streamlit as st

ICON = Path(__file__).resolve().parent / "assets" / "neswap-icon.png"
st.set_page_config(page_title="neswap — named entity swapping", page_icon=str(ICON), layout="wide")

PAGES = [
    st.Page("pages/1_corpus.py", title="1 · Corpus", icon="📄", default=True),
    st.Page("pages/2_entities.py", title="2 · Entities & roles", icon="🏷️"),
    st.Page("pages/3_clusters.py", title="3 · Clusters", icon="🧭"),
    st.Page("pages/4_swaps.py", title="4 · Swaps", icon="🔁"),
    st.Page("pages/5_frontier.py", title="5 · Risk–utility frontier", icon="⚖️"),
    st.Page("pages/6_export.py", title="6 · Export", icon="📦"),
    st.Page("pages/7_check.py", title="7 · Check", icon="🛡️"),
]

navigation = st.navigation(PAGES)

with st.sidebar:
    st.markdown("**neswap** anonymises a corpus by swapping named entities between similar "
                "passages of different documents. Work through the pages in order; your "
                "choices are saved in the workspace.")
    from appkit.sidebar import state_summary

    state_summary()

navigation.run()
