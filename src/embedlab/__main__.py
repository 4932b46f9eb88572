"""``python -m embedlab`` runs the CLI."""

import sys


def run() -> int:
    """The console script: ``main``, and exit 130 without a traceback for a Ctrl-C while importing it."""
    try:
        from .cli import main
    except KeyboardInterrupt:
        print("embedlab: interrupted", file=sys.stderr)
        return 130
    return main()


if __name__ == "__main__":
    sys.exit(run())
