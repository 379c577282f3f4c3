#!/usr/bin/env python3
"""Validate a JSON document against a consumer's schema kept in tests/data/.

    schemas.py NAME FILE     NAME: sarif or speedscope (tests/data/README.md)

Exit 0 when FILE is valid, 1 with one line per violation on stderr when it
is not, 77 when no jsonschema module can be had: neither this Python's nor
Debian's python3-jsonschema (for /usr/bin/python3, which scripts/
install-deps.sh installs), whose interpreter then runs this file instead.
"""
import json
import os
import subprocess
import sys

SCHEMAS = {
    "sarif": "sarif-schema-2.1.0.json",
    "speedscope": "speedscope-file-format-schema.json",
}
DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
SYSTEM_PYTHON = "/usr/bin/python3"
NO_JSONSCHEMA = 77


def problems(name, doc):
    """The schema's violations in doc (at most 50, as "path: message"); None without jsonschema."""
    try:
        import jsonschema
    except ImportError:
        return None
    with open(os.path.join(DATA, SCHEMAS[name]), encoding="utf-8") as f:
        schema = json.load(f)
    validator = jsonschema.validators.validator_for(schema)(schema)
    out = []
    for e in sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path)):
        path = "/".join(str(p) for p in e.absolute_path) or "(document)"
        out.append("%s: %s" % (path, e.message[:300]))
        if len(out) == 50:
            break
    return out


def validate(name, path):
    """(exit status as described above, the lines to say: violations or why not checked)."""
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    errs = problems(name, doc)
    if errs is not None:
        return (1 if errs else 0), ["%s: %s schema: %s" % (path, name, e) for e in errs]
    if os.path.exists(SYSTEM_PYTHON) and os.path.realpath(sys.executable) != os.path.realpath(SYSTEM_PYTHON) \
            and not os.environ.get("CT_SCHEMAS_REEXEC"):
        env = dict(os.environ, CT_SCHEMAS_REEXEC="1")
        r = subprocess.run([SYSTEM_PYTHON, os.path.abspath(__file__), name, path], env=env,
                           stderr=subprocess.PIPE, universal_newlines=True)
        return r.returncode, r.stderr.splitlines()
    return NO_JSONSCHEMA, ["%s: not validated against the %s schema: no jsonschema module "
                           "(Debian: python3-jsonschema)" % (path, name)]


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in SCHEMAS:
        sys.stderr.write("usage: schemas.py %s FILE\n" % "|".join(sorted(SCHEMAS)))
        sys.exit(2)
    rc, lines = validate(sys.argv[1], sys.argv[2])
    for line in lines:
        sys.stderr.write(line + "\n")
    sys.exit(rc)
