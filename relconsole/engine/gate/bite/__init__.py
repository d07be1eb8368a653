"""Bite (SPEC §8): mutants of a relation's subject, which the relation must catch, their targets, cache and report."""
