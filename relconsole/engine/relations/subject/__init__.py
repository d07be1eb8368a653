"""The subject side of a relation run (SPEC §7 "The judge and the subject").

``harness.py`` is the stdlib-only fork server that runs the code under review, one call per
forked child; its parts (``wire``, ``inputs``, ``calls``, ``kept``, ``adapters``, ``history``, ``child``,
``namespaces``, ``pagecache``, ``reaping``, ``disguise``) are standard-library-only modules too, which
``script.py`` merges with it into the one script the server runs. ``server.py`` starts it
(inside bubblewrap where the machine has it) and speaks to it from the judge.
"""
