#!/usr/bin/env python3
"""Check cumtrace-report's CI outputs against what their consumers require.

    ci_formats.py junit FILE    JUnit XML as Jenkins (junit plugin) and GitLab read it
    ci_formats.py sarif FILE    SARIF 2.1.0 as GitHub code scanning reads it

Exit 0 and a summary on stdout when the file passes, 1 and one line per
problem on stderr when it does not. The summary, one line each:
    junit: "tests N failures F errors E skipped S", then per testcase
           "CLASSNAME|NAME|failed|skipped|passed"
    sarif: "results N", then per result "RULEID|LEVEL|URI:LINE|suppressed|-"

What is checked (the documented minimum of each consumer):
  JUnit: the rules of the Jenkins xunit plugin's JUnit schema, junit-10.xsd
    (jenkinsci/xunit-plugin, src/main/resources/org/jenkinsci/plugins/xunit/
    types/model/xsd/junit-10.xsd, MIT; no Debian or npm package ships it, so
    its rules are restated in JUNIT10 below, not the file itself): each
    element's allowed attributes, required attributes and allowed children,
    text only where the schema allows it, and "time" of <testsuites> and
    <testsuite> in its SUREFIRE_TIME pattern. Then: well-formed XML; the root
    is <testsuites> (or one <testsuite>); every
    <testsuite> has a name and tests/failures/errors/skipped counts equal to
    its testcases; <testsuites> counts, when present, are the sums; every
    <testcase> has a non-empty name and classname, and (classname, name) is
    unique in the file (Jenkins and GitLab key test history on it); every
    <failure> and <error> has a message attribute; a testcase has at most one
    of failure, error and skipped.
  SARIF: valid against the SARIF 2.1.0 JSON schema (tests/data/, through
    tests/schemas.py; with a note on stderr, not a failure, where no
    jsonschema module can be had), then (GitHub code scanning, "SARIF
    support for code scanning"): version
    "2.1.0"; a $schema URI; runs[] with tool.driver.name; results[] where
    every result has ruleId, message.text and at least one location (GitHub
    refuses a whole file with a result without one), at most 10 locations,
    each with physicalLocation.artifactLocation.uri (a non-empty URI without
    spaces) and region.startLine >= 1; rules[] ids unique and every ruleId
    among them; ruleIndex, when present, pointing at that rule; every rule
    with help.text (GitHub requires it: SARIF Multitool rule GH2012).
"""
import json
import os
import re
import sys
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import schemas  # noqa: E402  (tests/schemas.py)

# junit-10.xsd, element by element: attributes allowed, attributes required,
# child elements allowed, and whether text may stand in it (mixed content or a
# simple type). Attributes or children not listed make the document invalid.
_RERUN = {"attrs": {"message", "type"}, "required": {"type"},
          "children": {"stackTrace", "system-out", "system-err"}, "text": True}
_RESULT = {"attrs": {"type", "message"}, "required": set(), "children": set(), "text": True}
_TEXT = {"attrs": set(), "required": set(), "children": set(), "text": True}
JUNIT10 = {
    "testsuites": {"attrs": {"name", "time", "tests", "failures", "errors"}, "required": set(),
                   "children": {"testsuite"}, "text": False},
    "testsuite": {"attrs": {"name", "tests", "failures", "errors", "group", "time", "skipped", "timestamp",
                            "hostname", "id", "package", "file", "log", "url"},
                  "required": {"name", "tests", "failures", "errors"},
                  "children": {"testsuite", "properties", "testcase", "system-out", "system-err"}, "text": False},
    "properties": {"attrs": set(), "required": set(), "children": {"property"}, "text": False},
    "property": {"attrs": {"name", "value"}, "required": {"name", "value"}, "children": set(), "text": False},
    "testcase": {"attrs": {"name", "time", "classname", "group"}, "required": {"name"},
                 "children": {"skipped", "error", "failure", "rerunFailure", "rerunError", "flakyFailure",
                              "flakyError", "system-out", "system-err"}, "text": False},
    "failure": _RESULT, "error": _RESULT, "skipped": _RESULT,
    "rerunFailure": _RERUN, "rerunError": _RERUN, "flakyFailure": _RERUN, "flakyError": _RERUN,
    "system-out": _TEXT, "system-err": _TEXT, "stackTrace": _TEXT,
}
# junit-10.xsd's SUREFIRE_TIME, the type of "time" on <testsuites> and <testsuite>
SUREFIRE_TIME = re.compile(r"(([0-9]{0,3},)*[0-9]{3}|[0-9]{0,3})*(\.[0-9]*)?")


def problems_junit10(root):
    """Where the document breaks junit-10.xsd's rules (JUNIT10)."""
    errs = []

    def walk(el, path):
        rule = JUNIT10.get(el.tag)
        if rule is None:
            errs.append("%s: <%s> is not an element of junit-10.xsd" % (path, el.tag))
            return
        for a in sorted(set(el.attrib) - rule["attrs"]):
            errs.append("%s: attribute %s is not allowed on <%s> (junit-10.xsd)" % (path, a, el.tag))
        for a in sorted(rule["required"] - set(el.attrib)):
            errs.append("%s: <%s> lacks the required attribute %s (junit-10.xsd)" % (path, el.tag, a))
        if el.tag in ("testsuites", "testsuite") and "time" in el.attrib and \
                not SUREFIRE_TIME.fullmatch(el.attrib["time"]):
            errs.append("%s: time=%r is not a SUREFIRE_TIME (junit-10.xsd)" % (path, el.attrib["time"]))
        texts = [el.text] + [c.tail for c in el]
        if not rule["text"] and any(t and t.strip() for t in texts):
            errs.append("%s: <%s> holds text (junit-10.xsd allows none)" % (path, el.tag))
        for i, c in enumerate(el):
            if c.tag not in rule["children"]:
                errs.append("%s: <%s> is not allowed in <%s> (junit-10.xsd)" % (path, c.tag, el.tag))
            else:
                walk(c, "%s/%s[%d]" % (path, c.tag, i))

    walk(root, root.tag)
    return errs


def problems_junit(path, out):
    errs = []
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as e:
        return ["not well-formed XML: %s" % e]
    if root.tag == "testsuites":
        suites = root.findall("testsuite")
    elif root.tag == "testsuite":
        suites = [root]
    else:
        return ["root element is <%s>, not <testsuites> or <testsuite>" % root.tag]
    errs.extend(problems_junit10(root))
    if not suites:
        errs.append("no <testsuite>")
    seen = set()
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    lines = []
    for si, suite in enumerate(suites):
        if not suite.get("name"):
            errs.append("testsuite %d has no name" % si)
        counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        for tc in suite.findall("testcase"):
            name, cls = tc.get("name"), tc.get("classname")
            if not name:
                errs.append("testcase without a name in suite %d" % si)
            if not cls:
                errs.append("testcase %r without a classname" % name)
            key = (cls, name)
            if key in seen:
                errs.append("duplicate testcase classname=%r name=%r" % key)
            seen.add(key)
            counts["tests"] += 1
            kids = [c for c in tc if c.tag in ("failure", "error", "skipped")]
            if len(kids) > 1:
                errs.append("testcase %r has %d results" % (name, len(kids)))
            status = "passed"
            for c in kids:
                if c.tag in ("failure", "error") and c.get("message") is None:
                    errs.append("<%s> of %r has no message" % (c.tag, name))
                counts[{"failure": "failures", "error": "errors", "skipped": "skipped"}[c.tag]] += 1
                status = {"failure": "failed", "error": "error", "skipped": "skipped"}[c.tag]
            lines.append("%s|%s|%s" % (cls, name, status))
        for k, v in counts.items():
            got = suite.get(k)
            if got is None:
                errs.append("testsuite %r has no %s count" % (suite.get("name"), k))
            elif not got.isdigit() or int(got) != v:
                errs.append("testsuite %r says %s=%s, it has %d" % (suite.get("name"), k, got, v))
            totals[k] += v
    if root.tag == "testsuites":
        for k, v in totals.items():
            got = root.get(k)
            if got is not None and (not got.isdigit() or int(got) != v):
                errs.append("testsuites says %s=%s, the suites have %d" % (k, got, v))
    out.append("tests %d failures %d errors %d skipped %d" %
               (totals["tests"], totals["failures"], totals["errors"], totals["skipped"]))
    out.extend(lines)
    return errs


def get(obj, *path):
    for p in path:
        if isinstance(p, int):
            if not isinstance(obj, list) or p >= len(obj):
                return None
        elif not isinstance(obj, dict) or p not in obj:
            return None
        obj = obj[p]
    return obj


def problems_sarif(path, out):
    errs = []
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (ValueError, UnicodeDecodeError) as e:
        return ["not JSON: %s" % e]
    if not isinstance(doc, dict):
        return ["the document is not an object"]
    rc, lines = schemas.validate("sarif", path)
    if rc == schemas.NO_JSONSCHEMA:
        sys.stderr.write("\n".join(lines) + "\n")
    elif rc:
        errs.extend(line.split(": ", 1)[1] for line in lines)
    if doc.get("version") != "2.1.0":
        errs.append("version is %r, not \"2.1.0\"" % doc.get("version"))
    schema = doc.get("$schema")
    if not isinstance(schema, str) or not schema.startswith(("http://", "https://")):
        errs.append("$schema is %r, not a URI" % schema)
    runs = doc.get("runs")
    if not isinstance(runs, list) or not runs:
        return errs + ["runs is not a non-empty array"]
    lines = []
    n = 0
    for ri, run in enumerate(runs):
        name = get(run, "tool", "driver", "name")
        if not isinstance(name, str) or not name:
            errs.append("runs[%d].tool.driver.name is missing" % ri)
        rules = get(run, "tool", "driver", "rules") or []
        ids = [r.get("id") for r in rules if isinstance(r, dict)]
        if len(ids) != len(set(ids)) or any(not isinstance(i, str) or not i for i in ids):
            errs.append("runs[%d]: rule ids are not unique non-empty strings" % ri)
        for k, rule in enumerate(rules):
            if not isinstance(get(rule, "help", "text"), str) or not rule["help"]["text"]:
                errs.append("runs[%d].tool.driver.rules[%d]: no help.text (GitHub requires it: GH2012)" % (ri, k))
        results = run.get("results")
        if not isinstance(results, list):
            errs.append("runs[%d].results is not an array" % ri)
            continue
        for i, r in enumerate(results):
            where = "runs[%d].results[%d]" % (ri, i)
            n += 1
            rid = r.get("ruleId")
            if not isinstance(rid, str) or not rid:
                errs.append(where + ": no ruleId")
            elif ids and rid not in ids:
                errs.append(where + ": ruleId %r is not a rule of the driver" % rid)
            if "ruleIndex" in r and (not isinstance(r["ruleIndex"], int) or
                                     r["ruleIndex"] >= len(ids) or ids[r["ruleIndex"]] != rid):
                errs.append(where + ": ruleIndex does not name its rule")
            text = get(r, "message", "text")
            if not isinstance(text, str) or not text:
                errs.append(where + ": no message.text")
            locs = r.get("locations")
            if not isinstance(locs, list) or not locs:
                errs.append(where + ": no location (GitHub refuses the file)")
                locs = []
            if len(locs) > 10:
                errs.append(where + ": more than 10 locations")
            first = "-"
            for li, loc in enumerate(locs):
                uri = get(loc, "physicalLocation", "artifactLocation", "uri")
                line = get(loc, "physicalLocation", "region", "startLine")
                if not isinstance(uri, str) or not uri or " " in uri:
                    errs.append("%s.locations[%d]: artifactLocation.uri is %r" % (where, li, uri))
                if not isinstance(line, int) or isinstance(line, bool) or line < 1:
                    errs.append("%s.locations[%d]: region.startLine is %r" % (where, li, line))
                if li == 0:
                    first = "%s:%s" % (uri, line)
            supp = "suppressed" if r.get("suppressions") else "-"
            lines.append("%s|%s|%s|%s" % (rid, r.get("level", "warning"), first, supp))
    out.append("results %d" % n)
    out.extend(lines)
    return errs


def main(argv):
    if len(argv) != 3 or argv[1] not in ("junit", "sarif"):
        sys.stderr.write("usage: ci_formats.py junit|sarif FILE\n")
        return 2
    out = []
    errs = (problems_junit if argv[1] == "junit" else problems_sarif)(argv[2], out)
    if errs:
        for e in errs:
            sys.stderr.write("%s: %s\n" % (argv[2], e))
        return 1
    sys.stdout.write("\n".join(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
