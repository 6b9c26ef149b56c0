"""``python -m runners``. Ctrl-C ends it with one line and exit 130 at any moment, even while Python is still importing
the runner (on a loaded machine that takes seconds; a traceback there would be the one a reader sees)."""
import sys

try:
    from runners.core import main
    code = main()
except KeyboardInterrupt:
    print("python -m runners: interrupted", file=sys.stderr)
    code = 130
sys.exit(code)
