"""Workspace leases (SPEC §5): the lease on a shared workspace, its holders, TTLs and fencing tokens, in SQLite or Redis."""
