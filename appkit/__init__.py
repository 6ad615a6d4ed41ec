"""Glue between the Streamlit pages and neswap_core: caching, workspace, shared widgets.

Pages only arrange widgets; anything they compute comes from neswap_core through here.
"""
