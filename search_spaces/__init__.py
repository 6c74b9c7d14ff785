"""Filled in by its own issue; see DESIGN.md."""
