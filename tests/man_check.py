#!/usr/bin/env python3
"""Check a man page against its program's --help, both ways, and render it.

    man_check.py PAGE.1 HELP [OTHER-HELP...]

HELP is the text the page's program prints for --help; OTHER-HELP, that of a
program whose options the page may mention too (cumtrace(1) names
cumtrace-report's). Exit 0 and one summary line on stdout when the page
passes, 1 and one line per problem on stderr when it does not.

What is checked:
  - groff renders the page without a warning (-ww: all of them);
  - it has the sections NAME, SYNOPSIS, DESCRIPTION, OPTIONS, EXIT STATUS, SEE ALSO;
  - its SYNOPSIS is the help's usage lines;
  - every option the help lists (a line "  -x, --name ...") is an item (.TP) of
    the page, and every option item of the page is one the help lists;
  - every command the help lists (its "commands:" section, and the word after
    the program's name in a usage line) is an item of the page's COMMANDS, and
    every item there is one of them;
  - every option the rendered page mentions anywhere (examples too) is one that
    HELP or an OTHER-HELP lists.
This reads --help on its own terms, not with the generator's reader
(scripts/mkman.py), so that a fault of the generator shows.
"""
import re
import subprocess
import sys

OPTION = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")
REQUIRED = ["NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "EXIT STATUS", "SEE ALSO"]


def help_facts(text):
    """(options, commands, usage lines) that a --help text lists."""
    options, commands, usage = set(), set(), []
    in_commands = in_usage = False
    for l in text.split("\n"):
        if l.startswith("usage: "):
            in_usage = True
        elif not l.startswith(" "):
            in_usage = False
        if in_usage:
            u = re.split(r" {3,}", l[7:].strip())[0]  # less a trailing comment
            usage.append(u)
            w = u.split()
            if len(w) > 1 and re.fullmatch(r"[a-z]+", w[1]):
                commands.add(w[1])
            continue
        if l and not l.startswith(" "):
            in_commands = l.startswith("commands:")
        m = re.match(r"  (-[\w-]+)(?:, (-[\w-]+))?", l)
        if m:
            options.update(x for x in m.groups() if x)
        elif in_commands:
            m = re.match(r"  ([a-z][\w-]*)(?: |$)", l)
            if m:
                commands.add(m.group(1))
    return options, commands, usage


def plain(roff):
    """A roff line as the text it shows (fonts and escapes removed)."""
    s = re.sub(r"\\f[BIRP]", "", roff)
    return s.replace("\\-", "-").replace("\\&", "").replace("\\e", "\\")


def page_facts(roff):
    """(sections, option items, command items) of a man page's roff source."""
    sections, options, commands = [], set(), set()
    lines = roff.split("\n")
    for i, l in enumerate(lines):
        if l.startswith(".SH "):
            sections.append(l[4:].strip().strip('"'))
        elif l.startswith(".TP") and i + 1 < len(lines):
            tag = plain(lines[i + 1])
            if tag.startswith("-"):
                options.update(re.findall(r"(?:^|, )(-[\w-]+)", tag))
            elif sections and sections[-1] == "COMMANDS":
                commands.add(tag.split()[0])
    return sections, options, commands


def render(path):
    """groff's exit status, the page as text (hyphens and minus signs as '-'), its warnings."""
    r = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-P", "-cbou", path],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    return r.returncode, re.sub("[\u2010\u2212]", "-", r.stdout), r.stderr


def section_text(text, title):
    """The rendered lines of one section, stripped."""
    out, inside = [], False
    for l in text.split("\n"):
        if l and not l.startswith(" "):
            inside = l.strip() == title
        elif inside and l.strip():
            out.append(l.strip())
    return out


def problems(path, help_texts):
    """(problems, summary) of the page at PATH against the --help texts (its own first)."""
    helps = [help_facts(h) for h in help_texts]
    with open(path) as f:
        roff = f.read()
    errs = []
    rc, text, warnings = render(path)
    if rc != 0 or warnings.strip():
        errs += ["groff: " + w for w in warnings.strip().split("\n") if w] or ["groff exited %d" % rc]
    sections, man_opts, man_cmds = page_facts(roff)
    errs += ["no section %s" % s for s in REQUIRED if s not in sections]
    h_opts, h_cmds, usage = helps[0]
    synopsis = " ".join(section_text(text, "SYNOPSIS"))
    if synopsis.split() != " ".join(usage).split():
        errs.append("SYNOPSIS %r is not the usage %r" % (synopsis, " / ".join(usage)))
    errs += ["option %s: in --help, not an item of the page" % o for o in sorted(h_opts - man_opts)]
    errs += ["option %s: an item of the page, not in --help" % o for o in sorted(man_opts - h_opts)]
    errs += ["command %s: in --help, not in COMMANDS" % c for c in sorted(h_cmds - man_cmds)]
    errs += ["command %s: in COMMANDS, not in --help" % c for c in sorted(man_cmds - h_cmds)]
    known = set().union(*(h[0] for h in helps))
    mentioned = set(OPTION.findall(text))
    errs += ["option %s: mentioned, but no --help lists it" % o for o in sorted(mentioned - known)]
    return errs, "%d options, %d commands, %d sections" % (len(man_opts), len(man_cmds), len(sections))


def main():
    if len(sys.argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    texts = []
    for h in sys.argv[2:]:
        with open(h) as f:
            texts.append(f.read())
    errs, summary = problems(sys.argv[1], texts)
    for e in errs:
        sys.stderr.write("%s: %s\n" % (sys.argv[1], e))
    if not errs:
        print("%s: %s" % (sys.argv[1], summary))
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main())
