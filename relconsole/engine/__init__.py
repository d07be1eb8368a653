"""The headless engine: catalog, owners, leases, freezes, candidates, relations, commits.

Nothing under this package imports textual; the console and CLI call into it.
"""
