"""The protected oracle of the sample project: relations, leases, corpora and adapters."""
