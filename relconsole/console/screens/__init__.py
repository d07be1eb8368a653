"""Screens and dialogs of the review console."""
