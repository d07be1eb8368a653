# PYTHON_ARGCOMPLETE_OK  (python -m relconsole.cli answers shell completion too)
from relconsole.cli.main import main

raise SystemExit(main())
