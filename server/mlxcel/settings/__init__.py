"""The server's settings model: every option declared once (``settings/*_options.py``), and
argparse, ``--help``, ``docs/configuration.md`` and the config objects derived from it."""
