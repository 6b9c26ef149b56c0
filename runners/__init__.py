"""Runners: execute the labs per device profile and store each run under book/runs/<lab>/<run-id>/.

    python -m runners profiles
    python -m runners LAB --profile NAME [--quick] [--measure-only] [--runs-dir DIR] [lab options]
    python -m runners LAB --render RUN_DIR

A profile (``runners/profiles/<name>.json``) says what machine a run expects and with which parameters (JSON, not
YAML, so that the measuring entry reads it on a bare GPU pod). ``runners/core.py`` does everything the labs share:
profiles and the device check, the run directory, rendering with papermill, progress and exit codes. A lab is a
plug-in module that supplies only its measuring function, its notebook and its own options; adding one is one
module and one line in :data:`LABS`.
"""

#: lab -> its plug-in module (NAME, TITLE, NOTEBOOK, add_arguments, measure)
LABS = {
    "lab00": "runners.lab00",
    "lab01": "runners.lab01",
    "lab02": "runners.lab02",
    "gemms": "runners.gemms",
}
