#!/usr/bin/env python3
"""Make one man page (roff) from docs/man/pages.in and the programs' --help.

    mkman.py --page NAME --version V --help-of KEY=CMD... SOURCE > NAME.1

SOURCE holds every page (format: its header). The parts that the programs'
--help says (synopsis, commands, options, exit status) are taken from that
help, run now (--help-of KEY=CMD: `CMD --help`, CMD split as the shell would), so
the page cannot say otherwise; tests/man_check.py checks the result. Fails (exit
1, one line on stderr) on anything the source asks for that is not there.
"""
import argparse
import re
import shlex
import subprocess
import sys

OPTION = re.compile(r"(?<![\w\\-])(--?[A-Za-z][\w-]*)")
METAVAR = re.compile(r"^[A-Z][A-Z0-9/_|.]*$")


def die(msg):
    sys.stderr.write("mkman: %s\n" % msg)
    sys.exit(1)


# ---- roff ------------------------------------------------------------------

def esc(s):
    """Plain text: backslashes escaped."""
    return s.replace("\\", "\\e")


def code(s):
    """Text to be typed: its hyphens are minus signs, so that it copies as typed."""
    return esc(s).replace("-", "\\-")


def bold(s):
    return "\\fB" + code(s) + "\\fR"


def prose(s):
    """Text with `code` spans (bold); options (--x, -x) are bold wherever they stand."""
    out = []
    for i, part in enumerate(s.split("`")):
        if i % 2:
            out.append(bold(part))
        else:
            out.append(OPTION.sub(lambda m: bold(m.group(1)), esc(part)))
    return "".join(out)


def line(s):
    """One line of roff text: never taken for a request."""
    return "\\&" + s if s[:1] in (".", "'") else s


def term(t):
    """An item's tag from help: options and commands bold, metavariables italic."""
    words = []
    for w in t.split(" "):
        sep = "," if w.endswith(",") else ""
        w = w[: len(w) - len(sep)]
        if METAVAR.match(w) and not w.startswith("-"):
            words.append("\\fI" + esc(w) + "\\fR" + sep)
        else:
            words.append(bold(w) + sep)
    return " ".join(words)


def synopsis(u):
    """A usage line: the program, its command and options bold, what stands for something italic."""
    out = []
    for i, tok in enumerate(re.split(r"(\s+|[\[\]|])", u)):
        core = tok.rstrip(".")
        if i in (0, 2) and re.fullmatch(r"[a-z][\w-]*", tok) or OPTION.fullmatch(tok):
            out.append(bold(tok))
        elif METAVAR.match(core) or core.isalpha():
            out.append("\\fI" + esc(core) + "\\fR" + esc(tok[len(core):]))
        else:
            out.append(code(tok))
    return "".join(out)


# ---- the programs' help ------------------------------------------------------

class Help:
    """`CMD --help` read as: usage lines, prose, sections of items, exit status.

    Sections are an unindented paragraph ending in ':' followed by items: lines
    indented by two spaces, "TERM  DESCRIPTION" (an option's TERM: its names and
    metavariable), continued on lines indented further.
    """

    def __init__(self, key, text):
        self.key = key
        self.usage = []  # (line, comment)
        self.about = []  # paragraphs
        self.sections = []  # (title, [(term, description)])
        self.exit = None
        paras = re.split(r"\n\s*\n", text.strip("\n"))
        for p in paras:
            lines = p.split("\n")
            if lines[0].startswith("usage: "):
                for u in lines:
                    u = re.sub(r"^(usage: | +)", "", u)
                    parts = re.split(r" {3,}", u, maxsplit=1)
                    self.usage.append((parts[0], parts[1] if len(parts) > 1 else ""))
            elif lines[0].startswith("exit status:"):
                self.exit = " ".join(l.strip() for l in lines)[len("exit status:"):].strip()
            elif not lines[0].startswith(" ") and any(l.startswith("  ") for l in lines):
                head = [l for l in lines if not l.startswith(" ")]
                title = " ".join(head).strip()
                if not title.endswith(":"):
                    die("%s --help: section title %r does not end in ':'" % (key, title))
                self.sections.append((title[:-1], self.items(lines[len(head):])))
            else:
                self.about.append(" ".join(l.strip() for l in lines))

    def items(self, lines):
        items = []
        for l in lines:
            if l.startswith("  ") and not l.startswith("   "):
                m = re.match(r"  (-[^\s,]+(?:, -[^\s,]+)*(?: [A-Z][A-Z0-9/_|]*)?|[a-z][\w-]*)(?: +(.*))?$", l)
                if not m:
                    die("%s --help: cannot read item %r" % (self.key, l))
                items.append([m.group(1), m.group(2) or ""])
            elif items:
                items[-1][1] = (items[-1][1] + " " + l.strip()).strip()
            else:
                die("%s --help: continuation line before any item: %r" % (self.key, l))
        return items

    def section(self, prefix):
        for title, items in self.sections:
            if title.startswith(prefix):
                return items
        die("%s --help: no section starting %r" % (self.key, prefix))

    def described(self, name):
        """The description of option NAME in any section."""
        for _, items in self.sections:
            for t, d in items:
                if name in re.findall(r"-[\w-]+", t):
                    return d
        die("%s --help: no option %s" % (self.key, name))


def run_help(spec):
    key, _, cmd = spec.partition("=")
    if not cmd:
        die("--help-of %r: expected KEY=CMD" % spec)
    try:
        r = subprocess.run(shlex.split(cmd) + ["--help"], stdout=subprocess.PIPE, universal_newlines=True)
    except OSError as e:
        die("%s --help: %s" % (cmd, e))
    if r.returncode != 0:
        die("%s --help exited %d" % (cmd, r.returncode))
    return key, Help(key, r.stdout)


# ---- the source --------------------------------------------------------------

def md_table(path, first):
    """Rows (lists of cells) of the Markdown table in PATH whose header's first cell is FIRST."""
    rows, inside = [], False
    with open(path) as f:
        for l in f:
            l = l.rstrip("\n")
            cells = [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", l.strip())[1:-1]]
            if not inside:
                inside = l.startswith("|") and cells and cells[0] == first
            elif not l.startswith("|"):
                break
            elif not re.fullmatch(r"[-: ]*", "".join(cells)):
                rows.append(cells)
    if not rows:
        die("%s: no table whose first column is %r" % (path, first))
    return rows


def page(src, name, version, helps):
    """The roff text of page NAME."""
    out, para, pre = [], [], []
    seen = False

    def flush():
        if para:
            out.append(line(prose(" ".join(para))))
            para.clear()
        if pre:
            out.extend([".PP", ".RS 4", ".nf"] + [line(code(p)) for p in pre] + [".fi", ".RE"])
            pre.clear()

    def help_of(key):
        if key not in helps:
            die("no --help-of %s given" % key)
        return helps[key]

    def items(pairs):
        for t, d in pairs:
            out.extend([".TP", line(term(t)), line(prose(d))])

    cur = None
    for n, raw in enumerate(src, 1):
        l = raw.rstrip("\n")
        if l.startswith("%"):
            continue
        if l.startswith("@page "):
            cur = l.split()[1]
            if cur == name:
                seen = True
                _, pname, sec, summary = l.split(" ", 3)
                out.append('.TH %s %s "" "cumtrace %s" "User Commands"' % (pname.upper(), sec, version))
                out.extend([".nh", ".ad l"])  # no hyphenated command names, ragged right
                out.extend([".SH NAME", line("%s \\- %s" % (esc(pname).replace("-", "\\-"), esc(summary)))])
            continue
        if cur != name:
            continue
        if not l.strip():
            flush()
            out.append(".PP")
            continue
        if l.startswith("    "):
            if para:
                flush()
            pre.append(l[4:])
            continue
        if not l.startswith("@"):
            if pre:
                flush()
            para.append(l.strip())
            continue
        flush()
        words = shlex.split(l[1:])
        d, args = words[0], words[1:]
        try:
            if d == "section":
                out.append(".SH " + " ".join(args))
            elif d == "usage":
                h = help_of(args[0])
                for i, (u, _) in enumerate(h.usage):
                    out.append((".br\n" if i else "") + line(synopsis(u)))
            elif d == "about":
                for p in help_of(args[0]).about:
                    out.extend([line(prose(p)), ".PP"])
            elif d == "commands":
                h = help_of(args[0])
                pairs = list(h.section("commands"))
                names = {t for t, _ in pairs}
                for u, comment in h.usage:  # subcommands with a usage line of their own
                    w = u.split()
                    if len(w) > 1 and w[1].isalpha() and w[1].islower() and w[1] not in names:
                        pairs.append((w[1], comment or "see its usage above"))
                items(pairs)
            elif d == "options":
                h = help_of(args[0])
                pairs = h.section(args[1])
                if len(args) > 2:  # described by another program's help
                    other = help_of(args[2])
                    pairs = [(t, dsc or other.described(t.split()[0])) for t, dsc in pairs]
                items(pairs)
            elif d == "exit":
                h = help_of(args[0])
                if not h.exit:
                    die("%s --help: no exit status" % args[0])
                out.append(line(prose(h.exit)))
            elif d == "table":
                for cells in md_table(args[0], args[1]):
                    tag = prose(cells[0])
                    if len(cells) > 2 and cells[1]:
                        tag += " (default " + prose(cells[1]) + ")"
                    out.extend([".TP", line(tag), line(prose(cells[-1]))])
            elif d == "item":
                out.extend([".TP", line(prose(" ".join(args)))])
            else:
                die("line %d: unknown directive @%s" % (n, d))
        except IndexError:
            die("line %d: @%s needs more words" % (n, d))
    flush()
    if not seen:
        die("no @page %s" % name)
    # blank lines make .PP; none right after a heading or before another
    text, prev = [], ""
    for o in out:
        if o == ".PP" and (prev.startswith((".SH", ".TH", ".PP", ".TP", ".br", ".ad")) or prev == ""):
            continue
        text.append(o)
        prev = o
    while text and text[-1] == ".PP":
        text.pop()
    return "\n".join(text) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--page", required=True)
    ap.add_argument("--version", required=True)
    ap.add_argument("--help-of", dest="helps", action="append", default=[], metavar="KEY=CMD")
    ap.add_argument("source")
    a = ap.parse_args()
    helps = dict(run_help(s) for s in a.helps)
    with open(a.source) as f:
        sys.stdout.write(page(f.readlines(), a.page, a.version, helps))


if __name__ == "__main__":
    main()
