#!/usr/bin/env python3
"""Check the output of `cumtrace-report html`.

    check_html.py FILE [SUMMARY.json] [--leaks-text FILE] [--peak-text FILE]

Exits 1 with one line per violation, else writes a summary (JSON) of what
the page shows, per dump section, so that a test can compare it with the
JSON reports: the header, the peak, the leak and growth rows, the OOM rows,
the streams rows, the charts (series, points, their maxima).

What a page must be (docs/report.md, "html"):
- well-formed: <!DOCTYPE html>, every element that is not void closed in
  order (so a browser's DOM is the written tree), nothing after </html>, no
  block element inside a <p>, unique ids, every #fragment link to an id;
- self-contained: no attribute that loads or links anything but a
  #fragment (src, href, srcset, action, ...), no element that embeds
  (link, img, iframe, object, embed, base, form, ...), no url() or @import
  in a style sheet, no event handler attribute, no style attribute;
- a Content-Security-Policy meta first in <head> with default-src 'none',
  no 'unsafe-inline' or 'unsafe-eval', and the SHA-256 of every inline
  <style> in style-src and of every inline <script> in script-src (a
  <script> with src is an error);
- charts: every <svg class="chart"> has a plot rectangle and its axes' start
  and ends (data-t0, data-t-max, data-y-max); each series path (class "s")
  has at least two points, all of them inside the plot, and its highest
  point is its data-max on the y axis, within a pixel; every dot (the state
  at a peak) is a point of the series of its color (the line reaches it);
- marks on a chart: ticks (line.mark) inside the plot, at least 3 units
  apart, in time order; no two of one name where the second opens inside the
  first's range (a range counted twice); names (text.mark, 10px monospace:
  MARK_CHAR_W a character) beside their tick that do not run into each other;
- the lead: each dump section opens (right after its title) with a
  div.lead naming the largest leak site (p.lead-leak) and the peak's largest
  site (p.lead-peak) with their bytes, the same as the first rows of the
  leaks and peak tables; with --leaks-text / --peak-text (the text output of
  `cumtrace-report leaks` / `peak` of a one-dump page) the same bytes and a
  frame of the same site as their #1.
"""
import base64
import hashlib
import re
import sys
from html.parser import HTMLParser

from exportcheck import err, exit_on_errors, write_summary

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param",
        "source", "track", "wbr"}
# Attributes that make a browser load or navigate to something.
URL_ATTRS = {"src", "href", "srcset", "action", "formaction", "poster", "data", "background",
             "xlink:href", "ping", "manifest", "codebase", "cite", "longdesc", "lowsrc", "dynsrc",
             "archive", "classid", "icon", "imagesrcset"}
EMBEDDING = {"link", "img", "iframe", "frame", "frameset", "object", "embed", "applet", "base",
             "form", "audio", "video", "source", "track", "picture", "portal", "image", "use",
             "feimage", "foreignobject"}
# Elements a <p> cannot hold: the parser would close the <p> before them.
BLOCK = {"address", "article", "aside", "blockquote", "details", "div", "dl", "fieldset",
         "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "header",
         "hr", "main", "menu", "nav", "ol", "p", "pre", "section", "table", "ul"}


class Node:
    def __init__(self, tag, attrs, parent, line):
        self.tag, self.attrs, self.parent, self.line = tag, attrs, parent, line
        self.children = []

    def text(self):
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def walk(self):
        yield self
        for c in self.children:
            if isinstance(c, Node):
                yield from c.walk()

    def find(self, tag=None, cls=None):
        for n in self.walk():
            if (tag is None or n.tag == tag) and (cls is None or cls in n.classes()):
                yield n

    def first(self, tag=None, cls=None):
        return next(self.find(tag, cls), None)

    def classes(self):
        return (self.attrs.get("class") or "").split()


class Tree(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = Node("#root", {}, None, 0)
        self.stack = [self.root]
        self.doctype = None
        self.closed = False

    def add(self, tag, attrs):
        if self.closed:
            err("line %d: <%s> after </html>" % (self.getpos()[0], tag))
        d = {}
        for k, v in attrs:
            if k in d:
                err("line %d: <%s> repeats attribute %s" % (self.getpos()[0], tag, k))
            d[k] = v if v is not None else ""
        n = Node(tag, d, self.stack[-1], self.getpos()[0])
        self.stack[-1].children.append(n)
        return n

    def handle_decl(self, decl):
        self.doctype = decl

    def handle_starttag(self, tag, attrs):
        n = self.add(tag, attrs)
        if tag not in VOID:
            self.stack.append(n)

    def handle_startendtag(self, tag, attrs):
        self.add(tag, attrs)

    def handle_endtag(self, tag):
        if tag in VOID:
            err("line %d: end tag of the void element %s" % (self.getpos()[0], tag))
            return
        top = self.stack[-1]
        if top.tag != tag:
            err("line %d: </%s> closes <%s> (opened on line %d)" % (self.getpos()[0], tag, top.tag, top.line))
            # recover: close up to the matching element, if any
            for i in range(len(self.stack) - 1, 0, -1):
                if self.stack[i].tag == tag:
                    del self.stack[i:]
                    break
            return
        self.stack.pop()
        if tag == "html":
            self.closed = True

    def handle_data(self, data):
        if self.closed and data.strip():
            err("text after </html>: %r" % data[:40])
        self.stack[-1].children.append(data)


def csp_of(head):
    """The policy of the first element of <head>, as {directive: [sources]}."""
    first = next((c for c in head.children if isinstance(c, Node) and
                  not (c.tag == "meta" and "charset" in c.attrs)), None)
    if first is None or first.tag != "meta" or \
            (first.attrs.get("http-equiv") or "").lower() != "content-security-policy":
        err("the first element of <head> after the charset is not a Content-Security-Policy meta")
        return {}
    policy = {}
    for part in first.attrs.get("content", "").split(";"):
        words = part.split()
        if words:
            policy[words[0].lower()] = words[1:]
    return policy


def sha256_source(text):
    return "'sha256-%s'" % base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode()


def check_security(root):
    head = root.first("head")
    if head is None:
        err("no <head>")
        return 0
    policy = csp_of(head)
    if policy.get("default-src") != ["'none'"]:
        err("default-src is %r, not 'none'" % policy.get("default-src"))
    for d, sources in policy.items():
        for s in sources:
            if s in ("'unsafe-inline'", "'unsafe-eval'", "'unsafe-hashes'", "*", "data:", "http:",
                     "https:") or "://" in s:
                err("CSP %s allows %s" % (d, s))
    scripts = 0
    for n in root.walk():
        for k, v in n.attrs.items():
            if k in URL_ATTRS and not v.startswith("#"):
                err("line %d: <%s %s=%r> points outside the page" % (n.line, n.tag, k, v))
            if k.startswith("on"):
                err("line %d: <%s> has an event handler %s" % (n.line, n.tag, k))
            if k == "style":
                err("line %d: <%s> has a style attribute (the CSP refuses it)" % (n.line, n.tag))
            if re.search(r"(?i)javascript:|url\s*\(", v):
                err("line %d: <%s %s=%r>" % (n.line, n.tag, k, v))
        if n.tag in EMBEDDING:
            err("line %d: <%s> embeds or links a resource" % (n.line, n.tag))
        if n.tag == "meta" and (n.attrs.get("http-equiv") or "").lower() == "refresh":
            err("line %d: a meta refresh" % n.line)
        if n.tag in ("style", "script"):
            text = n.text()
            directive = "style-src" if n.tag == "style" else "script-src"
            allowed = policy.get(directive, policy.get("default-src", []))
            if n.tag == "script":
                scripts += 1
                if "src" in n.attrs:
                    err("line %d: <script src>" % n.line)
            if sha256_source(text) not in allowed:
                err("line %d: the inline <%s>'s hash %s is not in %s %r" %
                    (n.line, n.tag, sha256_source(text), directive, allowed))
            if n.tag == "style" and re.search(r"(?i)url\s*\(|@import", text):
                err("line %d: the style sheet loads something (url() or @import)" % n.line)
    return scripts


def check_structure(tree):
    root = tree.root
    if (tree.doctype or "").lower() != "doctype html":
        err("no <!DOCTYPE html> (got %r)" % tree.doctype)
    if len(tree.stack) > 1:
        err("not closed at the end: %s" % " ".join("<%s> (line %d)" % (n.tag, n.line) for n in tree.stack[1:]))
    html = root.first("html")
    if html is None or not tree.closed:
        err("no <html> element closed")
    ids = {}
    for n in root.walk():
        if "id" in n.attrs:
            if n.attrs["id"] in ids:
                err("line %d: id %r repeats (line %d)" % (n.line, n.attrs["id"], ids[n.attrs["id"]]))
            ids[n.attrs["id"]] = n.line
        if n.tag == "p":
            for c in n.walk():
                if c is not n and c.tag in BLOCK:
                    err("line %d: <%s> inside <p> (line %d)" % (c.line, c.tag, n.line))
    for n in root.find("a"):
        h = n.attrs.get("href", "")
        if h.startswith("#") and h[1:] not in ids:
            err("line %d: link to #%s, which no element has" % (n.line, h[1:]))


NUM = r"-?\d+(?:\.\d+)?"


def path_points(d):
    """The points of a path written with M, L, H, V and Z (absolute)."""
    pts, x, y = [], None, None
    toks = re.findall(r"[MLHVZ]|" + NUM, d)
    i = 0
    while i < len(toks):
        t = toks[i]
        if t in ("M", "L"):
            x, y = float(toks[i + 1]), float(toks[i + 2])
            i += 3
        elif t == "H":
            x = float(toks[i + 1])
            i += 2
        elif t == "V":
            y = float(toks[i + 1])
            i += 2
        elif t == "Z":
            i += 1
            continue
        else:
            raise ValueError("unexpected %r" % t)
        pts.append((x, y))
    if re.sub(r"[MLHVZ]|" + NUM + r"|\s", "", d):
        raise ValueError("stray characters")
    return pts


MARK_CHAR_W = 6.2  # html.c's: 10px monospace is 6px a character


def check_marks(svg, where, px, pw):
    """Mark ticks and names; their counts."""
    ticks, last, seen = [], None, {}
    for ln in svg.find("line", "mark"):
        try:
            x, t, end = float(ln.attrs["x1"]), int(ln.attrs["data-t"]), int(ln.attrs["data-end"])
        except (KeyError, ValueError) as e:
            err("%s: a mark tick without x1, data-t or data-end (%s)" % (where, e))
            continue
        name = ln.attrs.get("data-name", "")
        if not px - 0.05 <= x <= px + pw + 0.05:
            err("%s: a mark tick outside the plot" % where)
        if last is not None and (x < last[0] + 3 - 0.11 or t < last[1]):
            err("%s: mark ticks %.1f and %.1f closer than 3 units or out of order" % (where, last[0], x))
        prev = seen.get(name)
        if prev is not None and t <= prev[1]:
            err("%s: %r drawn twice: it opens at %d inside its own range %d-%d" % (where, name, t, prev[0], prev[1]))
        seen[name] = (t, max(end, prev[1] if prev else 0))
        last = (x, t)
        ticks.append(x)
    names, right = 0, None
    for tx in svg.find("text", "mark"):
        x, text = float(tx.attrs["x"]), tx.text()
        w = MARK_CHAR_W * len(text)
        lo = x - w if tx.attrs.get("text-anchor") == "end" else x
        if not any(abs(abs(x - t) - 2) < 0.11 for t in ticks):
            err("%s: the mark name %r is not beside a tick" % (where, text))
        if lo < px - 0.05 or lo + w > px + pw + 0.05:
            err("%s: the mark name %r runs out of the plot" % (where, text))
        if right is not None and lo < right:
            err("%s: the mark name %r runs into the one before" % (where, text))
        right = lo + w
        names += 1
    return len(ticks), names


def check_chart(svg):
    """Validate one chart; its summary: the series' labels, points and maxima."""
    where = "line %d: chart %s" % (svg.line, svg.attrs.get("class"))
    plot = svg.first("rect", "plot")
    try:
        t0, tmax, ymax = float(svg.attrs["data-t0"]), float(svg.attrs["data-t-max"]), float(svg.attrs["data-y-max"])
        px, py, pw, ph = (float(plot.attrs[k]) for k in ("x", "y", "width", "height"))
        vb = [float(v) for v in svg.attrs["viewbox"].split()]
    except (KeyError, AttributeError, ValueError) as e:
        err("%s: no plot area, axes or viewBox (%s)" % (where, e))
        return None
    if not (tmax > 0 and ymax > 0 and pw > 0 and ph > 0 and len(vb) == 4):
        err("%s: empty axes or plot" % where)
        return None
    if px < vb[0] or py < vb[1] or px + pw > vb[0] + vb[2] or py + ph > vb[1] + vb[3]:
        err("%s: the plot is outside the viewBox" % where)
    series = []
    for p in svg.find("path"):
        try:
            pts = path_points(p.attrs.get("d", ""))
        except (ValueError, IndexError) as e:
            err("%s: path d=%r: %s" % (where, p.attrs.get("d", "")[:60], e))
            continue
        eps = 0.051  # coordinates are written to 0.1
        if any(not (px - eps <= x <= px + pw + eps and py - eps <= y <= py + ph + eps) for x, y in pts):
            err("%s: a point of a path is outside the plot" % where)
        if "s" not in p.classes():
            continue  # a marker
        if len(pts) < 2:
            err("%s: a series with %d point(s)" % (where, len(pts)))
            continue
        top = (py + ph - min(y for _, y in pts)) / ph * ymax
        mx = int(p.attrs.get("data-max", "-1"))
        if abs(top - mx) > ymax / ph + ymax * 0.0005:
            err("%s: series %r peaks at %.0f on the axis, its data-max is %d" %
                (where, p.first("title").text() if p.first("title") else "?", top, mx))
        if any(b[0] < a[0] - eps for a, b in zip(pts, pts[1:])):
            err("%s: a series goes back in time" % where)
        title = p.first("title")
        series.append({"label": title.text() if title else None, "points": len(pts), "max": mx,
                       "pool": "pool" in p.classes(), "stroke": p.attrs.get("stroke"), "pts": pts})
    if not series:
        err("%s: no series" % where)
    dots = []
    for c in svg.find("circle"):
        try:
            cx, cy, v = float(c.attrs["cx"]), float(c.attrs["cy"]), int(c.attrs["data-bytes"])
        except (KeyError, ValueError) as e:
            err("%s: a dot without its position or data-bytes (%s)" % (where, e))
            continue
        if not (px <= cx <= px + pw and py <= cy <= py + ph):
            err("%s: a dot outside the plot" % where)
        if abs((py + ph - cy) / ph * ymax - v) > ymax / ph:
            err("%s: a dot of %d bytes drawn at %.0f" % (where, v, (py + ph - cy) / ph * ymax))
        # the line of its color reaches it: the peak is a point of the (sampled) series
        if not any(s["stroke"] == c.attrs.get("fill") and any(abs(x - cx) < 0.11 and abs(y - cy) < 0.11 for x, y in s["pts"])
                   for s in series):
            err("%s: the dot of %d bytes at (%.1f, %.1f) is on no point of its series" % (where, v, cx, cy))
        dots.append(v)
    ticks, names = check_marks(svg, where, px, pw)
    for s in series:
        del s["pts"], s["stroke"]
    return {"kind": [c for c in svg.classes() if c != "chart"], "t0": t0, "t_max": tmax, "y_max": ymax,
            "series": series, "dots": dots, "mark_ticks": ticks, "mark_names": names,
            "markers": len(list(svg.find("path", "oom")))}


def row_site(tr):
    """The site cell's label (the innermost frame), and the number of frames in its stack."""
    td = tr.first("td", "site")
    if td is None:
        return None, 0
    code = td.first("summary")
    label = code.first("code").text() if code is not None and code.first("code") is not None else td.text()
    ol = td.first("ol", "stack")
    return label, len(list(ol.find("li"))) if ol is not None else 0


def bytes_cell(tr):
    """The first cell of a row with data-bytes, as a number."""
    td = next((x for x in tr.find("td") if "data-bytes" in x.attrs), None)
    return int(td.attrs["data-bytes"]) if td is not None else None


def lead_of(sec):
    """The lead block: the largest leak and the peak's largest site, as (bytes, site label)."""
    lead = sec.first("div", "lead")
    h2 = sec.first("h2")
    if lead is None:
        err("section %s: no lead block" % sec.attrs.get("id"))
        return None
    kids = [c for c in sec.children if isinstance(c, Node)]
    if h2 is None or kids.index(lead) != kids.index(h2) + 1:
        err("section %s: the lead block is not right after the title" % sec.attrs.get("id"))
    out = {}
    for what in ("leak", "peak"):
        p = lead.first("p", "lead-" + what)
        if p is None:
            err("section %s: the lead names no %s" % (sec.attrs.get("id"), what))
            continue
        code = next((n for n in p.walk() if n.tag in ("code", "span") and "site" in n.classes()), None)
        strong = list(p.find("strong"))
        out[what] = {"bytes": int(p.attrs.get("data-bytes", "-1")), "site": code.text() if code else None,
                     "shown": strong[-1].text() if strong else None,
                     "peak": int(p.attrs["data-peak"]) if "data-peak" in p.attrs else None}
    return out


def check_lead(d):
    lead = d["lead"]
    if not lead or "leak" not in lead or "peak" not in lead:
        return
    want = (d["leaks"][0]["bytes"], d["leaks"][0]["site"]) if d["leaks"] else (0, None)
    if (lead["leak"]["bytes"], lead["leak"]["site"]) != want:
        err("section %s: the lead's leak %r is not the leaks table's first row %r" % (d["id"], lead["leak"], want))
    want = (d["peak_sites"][0]["bytes"], d["peak_sites"][0]["site"]) if d["peak_sites"] else (0, None)
    if (lead["peak"]["bytes"], lead["peak"]["site"]) != want:
        err("section %s: the lead's peak site %r is not the peak table's first row %r" % (d["id"], lead["peak"], want))
    if d["peak_bytes"] is not None and lead["peak"]["peak"] != d["peak_bytes"]:
        err("section %s: the lead's peak %r is not the page's %r" % (d["id"], lead["peak"]["peak"], d["peak_bytes"]))


def text_top(path):
    """The #1 of a text report: its bytes as shown, its site label ("site: LABEL", None when it
    has none) and its frames as (function, line)."""
    lines = open(path).read().splitlines()
    first = lines[0] if lines else ""
    for i, ln in enumerate(lines):
        m = re.match(r"#1\s+(\S+ \S+) in (\d+) allocation", ln)
        if m:
            frames, label = [], None
            rest = lines[i + 1:]
            while rest and re.match(r"\s+(why|site): ", rest[0]):
                if re.match(r"\s+site: ", rest[0]):
                    label = rest[0].split("site: ", 1)[1]
                rest = rest[1:]
            for f in rest:
                fm = re.match(r"\s+at (.+?) \((?:.*):(\d+)\)", f)
                if not fm:
                    if re.match(r"\s+at ", f):
                        frames.append((f.split()[1], None))
                        continue
                    break
                frames.append((fm.group(1), int(fm.group(2))))
            return first, m.group(1), int(m.group(2)), label, frames
    return first, None, None, None, []


def compare_text(d, what, path):
    first, shown, count, label, frames = text_top(path)
    lead = (d.get("lead") or {}).get(what)
    if lead is None:
        return
    if shown is None:
        if lead["bytes"]:
            err("the %s text has no #1, the lead names %r" % (what, lead))
        return
    if lead["shown"] != shown:
        err("the lead's %s shows %r, the %s report's #1 %r" % (what, lead["shown"], what, shown))
    site = lead["site"] or ""
    m = re.match(r"(.+?) \((?:.*):(\d+)\)$", site)
    fn, line = (m.group(1), int(m.group(2))) if m else (site.split(" ")[0], None)
    if label is not None:
        # the site's label, the same words in every report
        if site != label:
            err("the lead's %s site %r is not the %s report's #1 site %r" % (what, site, what, label))
    elif (fn, line) not in frames:
        err("the lead's %s site %r is no frame of the %s report's #1 %r" % (what, site, what, frames))
    if what == "peak":
        m = re.search(r"\((\d+) bytes\)", first)
        if not m or int(m.group(1)) != lead["peak"]:
            err("the lead's peak %r is not the peak report's %r" % (lead["peak"], first))


def summarize(root):
    dumps = []
    for sec in root.find("section", "dump"):
        if sec.attrs.get("id") == "overview":
            continue
        d = {"id": sec.attrs.get("id"), "pid": int(sec.attrs.get("data-pid", "-1")),
             "title": " ".join(sec.first("h2").text().split()) if sec.first("h2") else None}
        peak = next((n for n in sec.walk() if (n.attrs.get("id") or "").endswith("-peak-bytes")), None)
        d["peak_bytes"] = int(peak.attrs["data-bytes"]) if peak is not None else None
        d["facts"] = {}
        dl = sec.first("dl", "facts")
        if dl is not None:
            dts = list(dl.find("dt"))
            dds = list(dl.find("dd"))
            d["facts"] = {a.text(): " ".join(b.text().split()) for a, b in zip(dts, dds)}
        d["warnings"] = [" ".join(p.text().split()) for p in sec.find("p", "warn")]
        d["leaks"] = []
        for tr in sec.find("tr", "leak"):
            site, nframes = row_site(tr)
            d["leaks"].append({"class": tr.attrs.get("data-class"), "bytes": int(tr.attrs["data-bytes"]),
                               "count": int(tr.attrs["data-count"]), "site": site, "frames": nframes})
        d["growth"] = [{"bytes": int(tr.attrs["data-bytes"]), "site": row_site(tr)[0]}
                       for tr in sec.find("tr", "grow")]
        d["ooms"] = [{"bytes": int(tr.attrs["data-bytes"]), "site": row_site(tr)[0]} for tr in sec.find("tr", "oom")]
        t = sec.first("table", "sites")
        d["peak_sites"] = [{"bytes": bytes_cell(tr), "site": row_site(tr)[0]}
                           for tr in t.find("tr", "item")] if t is not None else []
        d["streams"] = [" ".join(tr.first("td").text().split()) for tr in sec.find("tr", "stream")]
        d["charts"] = [c for c in (check_chart(s) for s in sec.find("svg", "chart")) if c]
        d["sections"] = [h.attrs.get("id") for h in sec.find("h3")]
        d["more_rows"] = [" ".join(tr.text().split()) for tr in sec.find("tr", "more")]
        d["lead"] = lead_of(sec)
        check_lead(d)
        marks = sec.first("p", "marks")
        d["marks"] = {k: int(marks.attrs["data-" + k]) for k in ("entries", "ticks", "named")} if marks else None
        dumps.append(d)
    return dumps


def main():
    args, opts = [], {}
    argv = sys.argv[1:]
    while argv:
        a = argv.pop(0)
        if a in ("--leaks-text", "--peak-text"):
            opts[a] = argv.pop(0)
        else:
            args.append(a)
    path = args[0]
    try:
        raw = open(path, "rb").read()
        text = raw.decode("utf-8")
    except (OSError, UnicodeDecodeError) as e:
        err("cannot read %s as UTF-8: %s" % (path, e))
        exit_on_errors("html")
    if re.search(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]", text):
        err("a control character in the page")
    tree = Tree()
    tree.feed(text)
    tree.close()
    check_structure(tree)
    scripts = check_security(tree.root)
    dumps = summarize(tree.root)
    if not dumps:
        err("no dump section")
    for what in ("leaks", "peak"):
        if "--%s-text" % what in opts:
            if len(dumps) != 1:
                err("--%s-text needs a page of one dump" % what)
            else:
                compare_text(dumps[0], "leak" if what == "leaks" else "peak", opts["--%s-text" % what])
    exit_on_errors("html")
    title = tree.root.first("title")
    write_summary({"title": title.text() if title else None, "scripts": scripts,
                   "svgs": len(list(tree.root.find("svg"))), "dumps": dumps},
                  args[1] if len(args) > 1 else None)


main()
