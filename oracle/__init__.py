"""relconsole's own oracle: the relations in ``catalog.yaml`` guard relconsole's engine."""
