"""Where x4lib's files are: the package, its data and schemas, and the repository around it (one place, so a
module can move between subpackages without counting ``.parent``s)."""
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
DATA_DIR = PACKAGE_DIR / "data"
SCHEMA_DIR = PACKAGE_DIR / "schemas"
REPO_ROOT = PACKAGE_DIR.parent
