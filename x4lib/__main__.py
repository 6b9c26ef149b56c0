"""``python -m x4lib``. Ctrl-C ends it with one line and exit 130 at any moment, even while Python is still importing
the command (on a loaded machine that takes seconds; a traceback there would be the one a reader sees)."""
import sys

try:
    from x4lib.cli import main
    code = main()
except KeyboardInterrupt:
    print("python -m x4lib: interrupted", file=sys.stderr)
    code = 130
sys.exit(code)
