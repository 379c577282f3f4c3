"""pytest plugin: the CUDA memory each test leaves behind, and its peak.

    pytest -p cumtrace.pytest_plugin --cumtrace      (-p is not needed once installed)

    @pytest.mark.limit_cuda_leaks("0B")       # fail when more is still allocated at its end
    @pytest.mark.limit_cuda_memory("1 GiB")   # fail when more was allocated at once

How: ``--cumtrace`` re-executes the interpreter once, with the same command line,
under ``LD_PRELOAD=libcumtrace.so`` (found as the ``cumtrace`` wrapper finds it;
``CUMTRACE_LIB`` names it), unless the shim is loaded already (``cumtrace run --
pytest ...``). Each test's call is a range named ``pytest NODEID`` in the dump.
After the call of a test with a marker the plugin flushes the dump and asks
``cumtrace-report windows`` for that range: the allocations made inside it that
are still live at its end (tensors and other device memory of the program; the
free blocks and segments a caching allocator keeps are not counted) and the
most such bytes live at once. At the end of the session one more query over
every test's range lists the tests that left memory allocated. Setup and
teardown (fixtures) are outside the range.

Without ``--cumtrace`` the markers are registered and nothing is checked: one
line in the terminal summary says how many tests had them.
"""
import gc
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

import pytest

import cumtrace

# make install writes PREFIX/lib and PREFIX/bin here (as it does in bin/cumtrace)
_LIBDIR = "@LIBDIR@"
_BINDIR = "@BINDIR@"
_HERE = os.path.dirname(os.path.abspath(__file__))

# Set in the environment of the re-executed interpreter, so that it never re-executes
# again: the folder of the dump to remove at the end, or "" (nothing to remove).
_EXEC_ENV = "CUMTRACE_PYTEST"
_WINDOW = "pytest "  # a test's range is named _WINDOW + its node id
_MARKERS = {
    "limit_cuda_leaks": "limit_cuda_leaks(size): fail when more CUDA memory made by the test "
                        "is still allocated at its end (cumtrace, --cumtrace); size: bytes, or '1.5 MiB', '0B'",
    "limit_cuda_memory": "limit_cuda_memory(size): fail when more CUDA memory made by the test "
                         "was allocated at once (cumtrace, --cumtrace); size as for limit_cuda_leaks",
}
_TOP = 5  # sites asked for per test
_SUMMARY_TESTS = 10  # tests listed in the terminal summary


def pytest_addoption(parser):
    group = parser.getgroup("cumtrace", "CUDA memory per test (cumtrace)")
    group.addoption("--cumtrace", action="store_true", default=False,
                    help="trace CUDA memory (re-executes the interpreter under libcumtrace.so) and check "
                         "the limit_cuda_leaks / limit_cuda_memory markers")
    group.addoption("--cumtrace-output", metavar="FILE", default=None,
                    help="keep the dump as FILE (%%p: the process id; default: CUMTRACE_OUTPUT, else a "
                         "temporary file removed at the end)")


# ---- finding the shim and the analyzer -----------------------------------------------------------

def _first_file(candidates):
    for path in candidates:
        if path and not path.startswith("@") and os.path.isfile(path):
            return os.path.abspath(path)
    return None


def _loaded_shim():
    """The path of the libcumtrace.so mapped into this process, None when none is."""
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.split(None, 5)[-1].strip()
                if os.path.basename(path) == "libcumtrace.so":
                    return path
    except OSError:
        pass
    return None


def find_shim():
    """libcumtrace.so: CUMTRACE_LIB, the install's, beside the package (build tree, PREFIX/lib),
    beside the cumtrace-report on PATH (build tree, PREFIX/bin/../lib)."""
    on_path = os.path.dirname(shutil.which("cumtrace-report") or "")
    return os.environ.get("CUMTRACE_LIB") or _first_file([
        os.path.join(_LIBDIR, "libcumtrace.so"),
        os.path.join(_HERE, "..", "..", "libcumtrace.so"),         # build/python/cumtrace
        os.path.join(_HERE, "..", "..", "..", "libcumtrace.so"),   # PREFIX/lib/cumtrace/python/cumtrace
        on_path and os.path.join(on_path, "libcumtrace.so"),
        on_path and os.path.join(on_path, "..", "lib", "libcumtrace.so")])


def find_report():
    """cumtrace-report: CUMTRACE_REPORT, the install's, beside the package or the loaded shim, PATH."""
    shim_dir = os.path.dirname(_loaded_shim() or find_shim() or "")
    return os.environ.get("CUMTRACE_REPORT") or _first_file([
        os.path.join(_BINDIR, "cumtrace-report"),
        os.path.join(_HERE, "..", "..", "cumtrace-report"),
        os.path.join(_HERE, "..", "..", "..", "..", "bin", "cumtrace-report"),
        shim_dir and os.path.join(shim_dir, "cumtrace-report"),
        shim_dir and os.path.join(shim_dir, "..", "bin", "cumtrace-report"),
        shutil.which("cumtrace-report")])


def _own_dump():
    """This process's dump: the open file that starts with the dump header and this pid's
    process record (include/cumtrace/format.h: magic, then the record of type 1, pid at 24)."""
    pid = os.getpid()
    try:
        fds = os.listdir("/proc/self/fd")
    except OSError:
        return None
    for fd in fds:
        try:
            path = os.readlink("/proc/self/fd/" + fd)
            if not path.startswith("/") or not os.path.isfile(path):
                continue
            with open(path, "rb") as f:
                head = f.read(28)
        except OSError:
            continue
        if len(head) == 28 and head[:8] == b"CUMTRACE" and struct.unpack_from("<HxxxxxxI", head, 16) == (1, pid):
            return path
    return None


# ---- sizes ---------------------------------------------------------------------------------------

_UNITS = {"": 0, "b": 0, "k": 10, "kb": 10, "kib": 10, "m": 20, "mb": 20, "mib": 20,
          "g": 30, "gb": 30, "gib": 30, "t": 40, "tb": 40, "tib": 40}


def parse_size(value):
    """Bytes of a marker's size: an int, or "0B", "512 KB", "1.5 GiB" (1024-based, as
    cumtrace-report's --max-peak-bytes and pytest-memray read them)."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    m = re.match(r"^\s*([0-9]+(?:\.[0-9]*)?)\s*([A-Za-z]*)\s*$", str(value))
    if not m or m.group(2).lower() not in _UNITS:
        raise ValueError("invalid size %r (bytes, or a number with B, KB, MB, GB, TB; KiB ... too)" % (value,))
    return int(float(m.group(1)) * (1 << _UNITS[m.group(2).lower()]))


def format_size(n):
    """As cumtrace-report writes sizes: "512 B", "1.5 KiB", "4.0 MiB"."""
    if n < 1024:
        return "%d B" % n
    v, unit = n / 1024.0, 0
    units = ("KiB", "MiB", "GiB", "TiB", "PiB", "EiB")
    while v >= 1024.0 and unit + 1 < len(units):
        v /= 1024.0
        unit += 1
    return "%.1f %s" % (v, units[unit])


# ---- --cumtrace: the preload ------------------------------------------------------------------------

def _command_line():
    """The interpreter's command line, to run it again."""
    if getattr(sys, "orig_argv", None):
        return [sys.executable] + list(sys.orig_argv[1:])
    if os.path.basename(sys.argv[0]) == "__main__.py":
        return [sys.executable, "-m", "pytest"] + sys.argv[1:]
    return [sys.executable] + sys.argv


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    """--cumtrace without the shim loaded: run this command again under it, once."""
    if not config.getoption("cumtrace") or cumtrace._c is not None:
        return None
    if _EXEC_ENV in os.environ:
        if os.environ[_EXEC_ENV]:
            shutil.rmtree(os.environ.pop(_EXEC_ENV), ignore_errors=True)
        raise pytest.UsageError("--cumtrace: %s was preloaded but is not loaded in this process"
                                % os.environ.get("LD_PRELOAD", "libcumtrace.so"))
    shim = find_shim()
    if not shim:
        raise pytest.UsageError("--cumtrace: cannot find libcumtrace.so (set CUMTRACE_LIB)")
    env = dict(os.environ)
    env["LD_PRELOAD"] = shim + (":" + env["LD_PRELOAD"] if env.get("LD_PRELOAD") else "")
    env.setdefault("NVTX_INJECTION64_PATH", shim)  # NVTX ranges, as the wrapper does
    output, remove = config.getoption("cumtrace_output"), ""
    if not output and not env.get("CUMTRACE_OUTPUT"):
        remove = tempfile.mkdtemp(prefix="cumtrace-pytest.")
        output = os.path.join(remove, "cumtrace.%p.dump")
    if output:
        env["CUMTRACE_OUTPUT"] = output
    env[_EXEC_ENV] = remove
    capture = config.pluginmanager.getplugin("capturemanager")
    if capture is not None:
        capture.stop_global_capturing()  # the real stdout and stderr back on 1 and 2
    sys.stdout.flush()
    sys.stderr.flush()
    argv = _command_line()
    os.execve(argv[0], argv, env)


# ---- the checks ------------------------------------------------------------------------------------

def pytest_configure(config):
    for name, text in _MARKERS.items():
        config.addinivalue_line("markers", text)
    config.pluginmanager.register(_Checker(config), "cumtrace-checker")


def _limits(item):
    """{marker name: its size argument} of the cumtrace markers on item."""
    out = {}
    for name in _MARKERS:
        mark = item.get_closest_marker(name)
        if mark is not None:
            out[name] = mark.args[0] if mark.args else mark.kwargs.get("size", 0)
    return out


class _Checker(object):
    def __init__(self, config):
        self.config = config
        self.tracing = config.getoption("cumtrace") and cumtrace.active()
        self.remove = os.environ.pop(_EXEC_ENV, "") if config.getoption("cumtrace") else ""
        self.report = find_report() if self.tracing else None
        self.dump = None
        self.unchecked = 0  # tests with a marker that were not checked
        self.failed = set()  # node ids that failed a check
        self.tests = []  # node ids whose call was a range
        self.problem = None  # why checks could not run
        if config.getoption("cumtrace") and not self.tracing:
            self.problem = "tracing is off (CUMTRACE_DISABLE?)"
        elif self.tracing and not self.report:
            self.problem = "cannot find cumtrace-report (set CUMTRACE_REPORT)"

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item):
        if not self.tracing:
            yield
            return
        self.tests.append(item.nodeid)
        with cumtrace.range(_WINDOW + item.nodeid):
            yield
            if _limits(item):
                gc.collect()  # what only a cycle kept is not a leak

    def _query(self, pattern):
        """cumtrace-report windows over the dump so far: its JSON, or None with self.problem set."""
        cumtrace.flush()
        if self.dump is None:
            self.dump = _own_dump()
        if self.dump is None:
            self.problem = "this process's dump was not found (is CUMTRACE_OUTPUT a device?)"
            return None
        # --no-symbols: no debug info read (the cost of a query is then the reading of the dump);
        # the cache rules go by module names and a test's frames are Python frames
        cmd = [self.report, "windows", "--format", "json", "--no-symbols", "--top", str(_TOP), "--window", pattern,
               self.dump]
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if proc.returncode != 0:
            self.problem = "cumtrace-report exited %d: %s" % (
                proc.returncode, proc.stderr.decode("utf-8", "replace").strip().splitlines()[-1:])
            return None
        return json.loads(proc.stdout.decode("utf-8", "replace"))

    def _where(self, site, nodeid):
        """"at FILE:LINE in FUNCTION": of the site's frames, the innermost in the test's own
        function, else in its file, else of the program's own code (FILE relative to the root
        folder when under it)."""
        root = str(getattr(self.config, "rootpath", None) or self.config.rootdir)
        test_file = os.path.realpath(os.path.join(root, nodeid.split("::")[0]))
        test_function = nodeid.split("::")[-1].split("[")[0]
        in_file = [f for f in site.get("stack", []) if f.get("file") and f.get("line")
                   and os.path.realpath(f["file"]) == test_file]
        frame = next((f for f in in_file if (f.get("function") or "").split(".")[-1] == test_function),
                     in_file[0] if in_file else site.get("where"))
        if not frame:
            return "with no frame of the program's own code"
        rel = os.path.relpath(frame["file"], root)
        return "at %s:%d in %s" % (frame["file"] if rel.startswith("..") else rel, frame["line"],
                                   frame.get("function") or "?")

    def _message(self, item, what, limit, total, sites, then=""):
        """"cumtrace: WHAT (limit L): N sites[ THEN], largest B at FILE:LINE in FUNCTION"."""
        largest = ", largest %s %s" % (format_size(sites[0]["bytes"]), self._where(sites[0], item.nodeid)) \
            if sites else ""
        return "cumtrace: %s (limit %s): %d site%s%s%s" % (what, format_size(limit), total,
                                                       "" if total == 1 else "s", then, largest)

    def _check(self, item, limits):
        """The failure messages of item's limits ([] when within them), None when unchecked."""
        try:
            limits = dict((k, parse_size(v)) for k, v in limits.items())
        except ValueError as e:
            return ["cumtrace: %s" % e]
        result = self._query(_WINDOW + item.nodeid)
        window = None
        for w in result["windows"] if result else []:
            if w["name"] == _WINDOW + item.nodeid:
                window = w  # the last one: this run of the test
        if window is None:
            if result is not None:
                self.problem = "the range of %s is not in the dump" % item.nodeid
            return None
        out = []
        if "limit_cuda_leaks" in limits and window["live_bytes"] > limits["limit_cuda_leaks"]:
            out.append(self._message(item, "%s leaked by this test" % format_size(window["live_bytes"]),
                                     limits["limit_cuda_leaks"], window["sites_total"], window["sites"]))
        if "limit_cuda_memory" in limits and window["peak_bytes"] > limits["limit_cuda_memory"]:
            out.append(self._message(item, "peak %s of CUDA memory in this test" % format_size(window["peak_bytes"]),
                                     limits["limit_cuda_memory"], window["peak_sites_total"],
                                     window["peak_sites"], " live then"))
        return out

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        if call.when != "call":
            return
        limits = _limits(item)
        report = outcome.get_result()
        if not limits or not report.passed:
            return
        failures = self._check(item, limits) if self.tracing and self.report else None
        if failures is None:
            self.unchecked += 1
        elif failures:
            self.failed.add(item.nodeid)
            report.outcome = "failed"
            report.longrepr = "\n".join(failures)

    def _left_behind(self):
        """(bytes, node id, where) of the tests that left memory allocated, largest first."""
        if not self.tests or self.problem:
            return []
        result = self._query(_WINDOW + "*")
        ran = set(self.tests)
        rows = {}
        for w in result["windows"] if result else []:
            nodeid = w["name"][len(_WINDOW):]
            if w["live_bytes"] and nodeid in ran and nodeid not in self.failed:
                rows[nodeid] = (w["live_bytes"], nodeid, w["sites_total"], w["sites"])
        return sorted(rows.values(), key=lambda r: (-r[0], r[1]))

    def pytest_terminal_summary(self, terminalreporter):
        write = terminalreporter.write_line
        if self.tracing and self.report:
            rows = self._left_behind()
            if rows:
                write("cumtrace: %d test%s left CUDA memory allocated at %s end:" % (
                    len(rows), "" if len(rows) == 1 else "s", "its" if len(rows) == 1 else "their"))
                for live, nodeid, total, sites in rows[:_SUMMARY_TESTS]:
                    where = ", largest %s %s" % (format_size(sites[0]["bytes"]), self._where(sites[0], nodeid)) if sites else ""
                    write("  %s %s (%d site%s%s)" % (format_size(live), nodeid, total, "" if total == 1 else "s",
                                                   where))
                if len(rows) > _SUMMARY_TESTS:
                    write("  ... and %d more" % (len(rows) - _SUMMARY_TESTS))
            if self.dump and not self.remove:
                write("cumtrace: dump: %s (cumtrace-report leaks, peak, windows)" % self.dump)
        if self.unchecked:
            why = self.problem or "run pytest with --cumtrace"
            write("cumtrace: %d test%s with limit_cuda_leaks / limit_cuda_memory not checked: %s" % (
                self.unchecked, "" if self.unchecked == 1 else "s", why))

    def pytest_unconfigure(self, config):
        if self.remove:
            shutil.rmtree(self.remove, ignore_errors=True)
