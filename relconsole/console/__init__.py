"""The Textual review console: a thin front end over ``relconsole.engine``."""
