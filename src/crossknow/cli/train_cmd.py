"""Placeholder: filled in this session."""
