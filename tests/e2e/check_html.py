#!/usr/bin/env python3
"""Check the output of `cumtrace-report html`.

    check_html.py FILE [SUMMARY.json]

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
- charts: every <svg class="chart"> has a plot rectangle and its axes' ends
  (data-t-max, data-y-max); each series path (class "s") has at least two
  points, all of them inside the plot, and its highest point is its
  data-max on the y axis, within a pixel.
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


def check_chart(svg):
    """Validate one chart; its summary: the series' labels, points and maxima."""
    where = "line %d: chart %s" % (svg.line, svg.attrs.get("class"))
    plot = svg.first("rect", "plot")
    try:
        tmax, ymax = float(svg.attrs["data-t-max"]), float(svg.attrs["data-y-max"])
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
        series.append({"label": title.text() if title else None, "points": len(pts), "max": mx})
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
        dots.append(v)
    return {"kind": [c for c in svg.classes() if c != "chart"], "t_max": tmax, "y_max": ymax,
            "series": series, "dots": dots,
            "markers": len([p for p in svg.find("path") if "s" not in p.classes()])}


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
        dumps.append(d)
    return dumps


def main():
    path = sys.argv[1]
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
    exit_on_errors("html")
    title = tree.root.first("title")
    write_summary({"title": title.text() if title else None, "scripts": scripts,
                   "svgs": len(list(tree.root.find("svg"))), "dumps": dumps},
                  sys.argv[2] if len(sys.argv) > 2 else None)


main()
