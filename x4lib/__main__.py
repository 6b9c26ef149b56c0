import sys

from x4lib.cli import main

sys.exit(main())
