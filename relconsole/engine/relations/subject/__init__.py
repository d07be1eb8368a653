"""The subject side of a relation run (SPEC §7 "The judge and the subject").

``harness.py`` is the stdlib-only fork server that runs the code under review, one call per
forked child; ``server.py`` starts it (inside bubblewrap where the machine has it) and speaks
to it from the judge.
"""
