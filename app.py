"""neswap dashboard: navigation over the workflow pages and a shared sidebar (nothing else)."""

import streamlit as st

st.set_page_config(page_title="neswap — named entity swapping", page_icon=":material/swap_horiz:", layout="wide")

PAGES = [
    st.Page("pages/1_corpus.py", title="1 · Corpus", icon=":material/description:", default=True),
    st.Page("pages/2_entities.py", title="2 · Entities & roles", icon=":material/label:"),
    st.Page("pages/3_clusters.py", title="3 · Clusters", icon=":material/hub:"),
    st.Page("pages/4_swaps.py", title="4 · Swaps", icon=":material/swap_horiz:"),
    st.Page("pages/5_frontier.py", title="5 · Risk–utility frontier", icon=":material/balance:"),
    st.Page("pages/6_export.py", title="6 · Export", icon=":material/download:"),
    st.Page("pages/7_check.py", title="7 · Check", icon=":material/verified_user:"),
]

navigation = st.navigation(PAGES)

with st.sidebar:
    st.markdown("**neswap** anonymises a corpus by swapping named entities between similar "
                "passages of different documents. Work through the pages in order; your "
                "choices are saved in the workspace.")
    from appkit.state import settings_summary

    settings_summary()

navigation.run()
