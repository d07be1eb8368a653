from relconsole.cli import main

raise SystemExit(main())
