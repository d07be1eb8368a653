"""The command line: ``relconsole COMMAND`` (``main`` parses and dispatches)."""
