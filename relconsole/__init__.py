"""relconsole: review AI-written patches with metamorphic relations.

The engine (``relconsole.engine``) holds every rule and never imports the console;
``relconsole.cli`` and ``relconsole.console`` are thin front ends over it.
"""

__version__ = "0.1.0"
