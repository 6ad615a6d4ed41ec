"""Raw transcripts -> chunks, entity spans and z (SPEC §1-§2)."""
