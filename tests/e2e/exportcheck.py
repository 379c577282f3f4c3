"""What the export checkers (check_perfetto.py, check_flame.py, check_memviz.py) share."""
import json
import sys

errors = []


def err(msg):
    """Record one violation."""
    errors.append(msg)


def exit_on_errors(name):
    """Print the violations (50 at most), one line each, and exit 1 if there are any."""
    if errors:
        for m in errors[:50]:
            print("%s check: %s" % (name, m), file=sys.stderr)
        sys.exit(1)


def write_summary(summary, path=None):
    """The summary as JSON, to path or standard output."""
    out = json.dumps(summary, indent=1, sort_keys=True)
    if path:
        with open(path, "w") as f:
            f.write(out)
    else:
        print(out)
