#!/usr/bin/env python3
"""Check the CI examples of docs/ci/ as their services read them, and hand out their commands.

    ci_examples.py github FILE OUTDIR    a GitHub Actions workflow
    ci_examples.py gitlab FILE OUTDIR    a GitLab CI file

Exit 0, a summary on stdout, and the example's commands in OUTDIR: gate.sh
(the commands that run the tests under the gate) and report.sh (those that
write the report the service reads afterwards, the file it names on the first
line of the summary); 1 and one line per problem on stderr otherwise.

What is checked (the services' documented rules, as far as they can be read
without the services):
  GitHub (docs.github.com, "Workflow syntax for GitHub Actions"): the file is
    YAML (PyYAML reads `on:` as the boolean true, as YAML 1.1 says; GitHub reads
    it as the key "on": both are taken); `on` and `jobs` present; every job has
    runs-on and a non-empty list of steps; every step has exactly one of run and
    uses, uses is ACTION@REF; step ids are unique. For cumtrace: a step with id
    gate runs `cumtrace run --fail-on-leak`; a step with id sarif writes SARIF
    (`--format sarif -o FILE`) and github/codeql-action/upload-sarif uploads
    that FILE, which needs the permission security-events: write; both run after
    a failed gate (their if holds always() or !cancelled()); actions/upload-artifact
    keeps the dumps.
  GitLab (docs.gitlab.com, "CI/CD YAML syntax reference"): the file is YAML;
    every job (a top-level key that is not a global keyword, nor hidden with a
    leading '.') has script, a string or a list of strings; its stage, when
    given, is one of stages. For cumtrace: the job whose artifacts:reports:junit
    names a file runs `cumtrace run --fail-on-leak` in script and writes that
    file (`--format junit -o FILE`) in after_script, which runs after a failed
    script too; artifacts:when is always, so that a failed job publishes it.
"""
import os
import re
import sys

try:
    import yaml
except ImportError:
    sys.stderr.write("ci_examples.py: PyYAML is not installed (Debian: python3-yaml)\n")
    sys.exit(77)

GITLAB_GLOBAL = {"default", "include", "stages", "variables", "workflow", "image", "services", "cache",
                 "before_script", "after_script", "spec", "pages"}


def lines(script):
    """A GitLab script (a string or a list of strings) as its lines, or None."""
    if isinstance(script, str):
        return [script]
    if isinstance(script, list) and script and all(isinstance(s, str) for s in script):
        return script
    return None


def output_of(cmd, fmt):
    """The -o FILE of a cumtrace-report command writing FMT, or None."""
    m = re.search(r"cumtrace-report .*--format %s\b.* -o (\S+)" % fmt, cmd)
    return m.group(1) if m else None


def runs_after_failure(cond):
    return isinstance(cond, str) and ("always()" in cond or "!cancelled()" in cond)


def github(doc, errs):
    if not isinstance(doc, dict):
        return errs.append("not a mapping")
    if "on" not in doc and True not in doc:
        errs.append("no on: (what starts the workflow)")
    jobs = doc.get("jobs")
    if not isinstance(jobs, dict) or not jobs:
        return errs.append("no jobs")
    found = {}
    for name, job in jobs.items():
        if not isinstance(job, dict):
            errs.append("job %s: not a mapping" % name)
            continue
        if "runs-on" not in job:
            errs.append("job %s: no runs-on" % name)
        steps = job.get("steps")
        if not isinstance(steps, list) or not steps:
            errs.append("job %s: no steps" % name)
            continue
        ids = set()
        for i, st in enumerate(steps):
            where = "job %s step %d" % (name, i + 1)
            if not isinstance(st, dict) or (("run" in st) == ("uses" in st)):
                errs.append("%s: needs exactly one of run and uses" % where)
                continue
            if "uses" in st and not re.fullmatch(r"[\w.-]+/[\w./-]+@[\w.-]+", str(st["uses"])):
                errs.append("%s: uses %r is not ACTION@REF" % (where, st["uses"]))
            if "id" in st:
                if st["id"] in ids:
                    errs.append("%s: id %s again" % (where, st["id"]))
                ids.add(st["id"])
                found[st["id"]] = st
            if "uses" in st:
                found[str(st["uses"]).split("@")[0]] = st
    gate, sarif = found.get("gate"), found.get("sarif")
    upload = found.get("github/codeql-action/upload-sarif")
    if not gate or "cumtrace run --fail-on-leak" not in gate.get("run", ""):
        errs.append("no step with id gate that runs cumtrace run --fail-on-leak")
    out = sarif and output_of(sarif.get("run", ""), "sarif")
    if not out:
        errs.append("no step with id sarif that runs cumtrace-report --format sarif -o FILE")
    if not upload:
        errs.append("no step uses github/codeql-action/upload-sarif")
    elif out and (upload.get("with") or {}).get("sarif_file") != out:
        errs.append("upload-sarif's sarif_file is not %s" % out)
    for what, st in (("sarif", sarif), ("upload-sarif", upload)):
        if st and not runs_after_failure(st.get("if")):
            errs.append("step %s does not run after a failed gate (if: always() or !cancelled())" % what)
    perms = doc.get("permissions") or {}
    if not isinstance(perms, dict) or perms.get("security-events") != "write":
        errs.append("permissions: no security-events: write (upload-sarif needs it)")
    if "actions/upload-artifact" not in found:
        errs.append("no step uses actions/upload-artifact (the dumps)")
    if errs:
        return None
    return out, gate["run"], sarif["run"]


def gitlab(doc, errs):
    if not isinstance(doc, dict):
        return errs.append("not a mapping")
    stages = doc.get("stages", ["build", "test", "deploy"])
    jobs = {k: v for k, v in doc.items() if k not in GITLAB_GLOBAL and not str(k).startswith(".")}
    if not jobs:
        return errs.append("no jobs")
    chosen = None
    for name, job in jobs.items():
        if not isinstance(job, dict) or lines(job.get("script")) is None:
            errs.append("job %s: no script (a string or a list of strings)" % name)
            continue
        if "stage" in job and job["stage"] not in stages:
            errs.append("job %s: stage %r is not one of stages" % (name, job["stage"]))
        arts = job.get("artifacts") or {}
        if isinstance(arts, dict) and isinstance(arts.get("reports"), dict) and arts["reports"].get("junit"):
            chosen = name, job, arts
    if not chosen:
        return errs.append("no job with artifacts: reports: junit")
    name, job, arts = chosen
    script, after = lines(job["script"]), lines(job.get("after_script")) or []
    junit = arts["reports"]["junit"]
    if not any("cumtrace run --fail-on-leak" in s for s in script):
        errs.append("job %s: script does not run cumtrace run --fail-on-leak" % name)
    if not any(output_of(s, "junit") == junit for s in after):
        errs.append("job %s: after_script does not write %s (cumtrace-report --format junit -o %s)" %
                    (name, junit, junit))
    if arts.get("when") != "always":
        errs.append("job %s: artifacts: when is not always (a failed gate would publish nothing)" % name)
    if errs:
        return None
    return junit, "\n".join(script), "\n".join(after)


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("github", "gitlab"):
        sys.stderr.write(__doc__)
        return 2
    kind, path, outdir = sys.argv[1:]
    errs = []
    try:
        with open(path) as f:
            doc = yaml.safe_load(f)
    except yaml.YAMLError as e:
        doc = None
        errs.append("not YAML: %s" % str(e).replace("\n", " "))
    got = (github if kind == "github" else gitlab)(doc, errs) if not errs else None
    if errs or not got:
        for e in errs:
            sys.stderr.write("%s: %s\n" % (path, e))
        return 1
    report, gate, after = got
    for name, text in (("gate.sh", gate), ("report.sh", after)):
        with open(os.path.join(outdir, name), "w") as f:
            f.write(text.rstrip("\n") + "\n")
    print(report)
    print("%s: %s ok" % (path, kind))
    return 0


if __name__ == "__main__":
    sys.exit(main())
