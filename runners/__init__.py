"""Runners: execute the labs per device profile and store each run under book/runs/<lab>/<run-id>/.

A profile (``runners/profiles/<name>.json``) says what machine a run expects and with which
parameters. JSON, not YAML, so that the plain-Python measuring entry (standard library + torch only)
can read it on a bare GPU pod. The lab issues add the lab entries (``python -m runners lab00 ...``).
"""
