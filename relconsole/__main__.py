# PYTHON_ARGCOMPLETE_OK  (python -m relconsole answers shell completion too)
import os
import sys

# python -m puts the working folder first on sys.path; in CI that is the reviewed checkout, whose
# argparse.py or json.py would run in the process that decides (red team, issue 19). relconsole
# is imported already, so nothing it needs is found through that entry.
if not sys.flags.safe_path and sys.path and sys.path[0] in ("", os.getcwd()):
    del sys.path[0]

from relconsole.cli.main import main  # noqa: E402

raise SystemExit(main())
