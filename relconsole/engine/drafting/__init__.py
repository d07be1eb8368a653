"""``propose`` (SPEC §10): a model drafts candidate relations or seed rows into quarantine.

The flow, each step its own function so the console and tests can use any of them:

1. ``prompt.read_ticket`` and ``prompt.candidate_prompt`` / ``prompt.seeds_prompt`` build a
   plain-text prompt from the ticket, the diff under review (capped at ``DIFF_LIMIT_BYTES``),
   the input schema of the relations and leases involved, and the allowed output shape.
2. ``drafter.run_drafter`` pipes the prompt to the user's command (``shlex``-split, no shell)
   with a timeout and a cap on what it prints. A failed drafter raises ``DrafterError`` (exit 3).
3. ``parse.drafted_items`` reads the drafter's stdout with the project's strict YAML loader
   (size and alias caps, no duplicate keys); a fenced block, several ``---`` documents,
   a list, or JSON lines (seed rows) are accepted. Nothing in it is ever executed.
4. ``judge.judge_candidates`` stamps true provenance (relconsole's, not the model's claim) and
   validates each candidate with ``validate_candidate`` exactly as the review validates a
   quarantine file; ``judge.judge_seed_rows`` does the same with ``validate_seed_rows``.
5. ``judge.commit_candidates`` / ``judge.commit_seed_rows`` commit only what passed onto the
   oracle branch as one ``quarantine:`` commit (§9, ``quarantine.commit_drafts``), built on a
   temporary index from the branch's tip like every console commit (``commits.commit_changes``):
   never through the working tree, which is the agent's branch, and never over a file the
   branch already holds. Where the oracle branch is checked out, its drafted paths are brought
   up to date too. ``quarantine`` holds the paths and the checks of the branch's tip.
"""
