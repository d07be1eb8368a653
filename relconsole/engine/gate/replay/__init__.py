"""Replay (SPEC §7): a miss run again on HEAD and on the merge base, its options, its runs and its sheet."""
