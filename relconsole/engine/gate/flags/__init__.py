"""Review flags (SPEC §9): the rules that read the patch's net diff, the probe tables, golden assertions, flag levels and reviewers' acknowledgements."""
