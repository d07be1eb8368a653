"""Widgets of the review console: they render and post messages, nothing more."""
