/*
 * The dump file: created at tracing's start (O_EXCL, never through a
 * symlink), its header and PROCESS record, the manifest's line, and the
 * descriptor, checked before every write because the program may close it
 * or reuse its number (docs/reliability.md). The writer (writer.c) and the
 * session (session.c) write and close it only through these functions.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "session.h"

/* ---- the dump's descriptor ----------------------------------------------------- */

/* Does fd name the dump (the file it was created as)? */
static int ct_fd_is_dump(int fd)
{
	struct stat st;
	return fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == ct_session.dump_dev &&
	       st.st_ino == ct_session.dump_ino;
}

/* Open an existing path to append to it: never created, never through a
 * symlink, never waiting (a FIFO). Returns the descriptor or -1. */
static int ct_open_append(const char *path)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (fd >= 0 && fcntl(fd, F_SETFL, O_APPEND) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Close the dump's descriptor when it still names the dump (else it is not ours). */
void ct_dump_close(void)
{
	int fd = atomic_exchange(&ct_session.fd, -1);
	if (ct_fd_is_dump(fd))
		close(fd);
}

/*
 * The dump's descriptor, checked before every write: the program may have
 * closed it, or closed it and opened a file of its own that got its number.
 * Then the dump is opened again by its absolute path when that still names
 * the same file (one warning), else tracing stops (one warning) and -1 is
 * returned. The old number is never closed or written: it is not the
 * shim's any more. What remains is a window of a few hundred nanoseconds
 * between the check and the write, in which a thread of the program would
 * have to close that number and get it back from open (it sits at the top
 * of the table, above what open hands out first) or dup2 onto it.
 */
static int ct_dump_fd(void)
{
	for (;;) {
		int fd = atomic_load(&ct_session.fd);
		if (fd < 0 || ct_fd_is_dump(fd))
			return fd;
		int again = ct_open_append(ct_session.path_abs);
		if (again >= 0 && !ct_fd_is_dump(again)) {
			close(again);
			again = -1;
			errno = ESTALE;
		}
		if (again >= 0)
			again = ct_fd_move_high(again);
		if (again < 0) {
			ct_warn_once(&ct_warned.write,
				     "descriptor %d no longer names %s (the program closed or "
				     "replaced it) and the dump cannot be opened again: %s; tracing "
				     "stopped, the program goes on",
				     fd, ct_session.path, strerror(errno));
			atomic_store(&ct_state, CT_STATE_DISABLED);
			return -1;
		}
		if (atomic_compare_exchange_strong(&ct_session.fd, &fd, again)) {
			ct_warn_once(&ct_warned.reopen,
				     "descriptor %d no longer names %s (the program closed or "
				     "replaced it); opened it again as descriptor %d",
				     fd, ct_session.path, again);
			return again;
		}
		close(again); /* another thread opened it again first */
	}
}

/*
 * How many times one write may find its descriptor closed under it (EBADF:
 * the program closed the number between ct_dump_fd's check and the write,
 * so nothing of it was written) and open the dump again.
 */
#define CT_DUMP_REOPENS 8

/* Write everything or fail; on failure tracing stops for good. */
int ct_dump_write(const void *p, size_t n)
{
	const unsigned char *c = p;
	int fd = ct_dump_fd();
	if (fd < 0)
		return -1;
	int reopens = 0;
	while (n > 0) {
		ssize_t w = write(fd, c, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EBADF && reopens++ < CT_DUMP_REOPENS) {
			fd = ct_dump_fd(); /* the number no longer names the dump: opened again */
			if (fd < 0)
				return -1;
			continue;
		}
		if (w <= 0) {
			ct_warn_once(&ct_warned.write,
				     "cannot write %s: %s; tracing stopped, the program goes on",
				     ct_session.path, w < 0 ? strerror(errno) : "short write");
			atomic_store(&ct_state, CT_STATE_DISABLED);
			return -1;
		}
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

/* ---- the dump file ------------------------------------------------------------------ */

/* Append the NUL-terminated "key=value" string to buf at *len. */
static void ct_kv(char *buf, size_t cap, size_t *len, const char *key, const char *val)
{
	int n = snprintf(buf + *len, cap - *len, "%s=%s", key, val ? val : "");
	if (n < 0 || (size_t)n + 1 > cap - *len)
		return;
	*len += (size_t)n + 1;
}

/*
 * The distributed launcher's variables ("env.RANK=3", ...: format.h). Read
 * here, at the first traced call like the options (config.c), never in a
 * constructor; getenv and snprintf into static buffers allocate nothing.
 */
static void ct_put_launch_env(char *buf, size_t cap, size_t *len)
{
	static char key[64], val[CT_LAUNCH_VALUE_MAX];
	for (unsigned i = 0; i < CT_LAUNCH_COUNT; i++) {
		const char *name = ct_launch_env_name(i);
		const char *v = getenv(name);
		if (!v)
			continue;
		snprintf(key, sizeof key, CT_LAUNCH_KEY_PREFIX "%s", name);
		snprintf(val, sizeof val, "%s", v);
		ct_kv(buf, cap, len, key, val);
	}
}

/* The file header and the PROCESS record; 0, or -1 when they could not be written. */
int ct_dump_put_process(void)
{
	static char buf[16384];
	struct ct_rec_process *p = (struct ct_rec_process *)buf;
	size_t len = sizeof *p;
	size_t cap = sizeof buf - 8;
	char tmp[PATH_MAX];
	memset(buf, 0, sizeof buf);
	p->rec.type = CT_REC_PROCESS;
	p->pid = (uint32_t)getpid();
	p->ppid = ct_session.proc.forked ? ct_session.proc.parent_pid : (uint32_t)getppid();
	p->start_realtime_ns = ct_session.proc.start_realtime;
	p->start_monotonic_ns = ct_session.proc.start_monotonic;
	p->clock_id = CLOCK_MONOTONIC;
	p->forked = (uint32_t)ct_session.proc.forked;
	ct_kv(buf, cap, &len, "version", CUMTRACE_VERSION);
	if (gethostname(tmp, sizeof tmp - 1) != 0)
		strcpy(tmp, "unknown");
	tmp[sizeof tmp - 1] = 0;
	ct_kv(buf, cap, &len, "host", tmp);
	/* before the long strings (exe, cwd, argv), which may fill the record */
	ct_put_launch_env(buf, cap, &len);
	ssize_t n = readlink("/proc/self/exe", tmp, sizeof tmp - 1);
	tmp[n > 0 ? n : 0] = 0;
	ct_kv(buf, cap, &len, "exe", tmp);
	if (!getcwd(tmp, sizeof tmp))
		tmp[0] = 0;
	ct_kv(buf, cap, &len, "cwd", tmp);
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		static char cmd[8192];
		ssize_t got = read(fd, cmd, sizeof cmd - 1);
		close(fd);
		if (got > 0) {
			cmd[got] = 0;
			for (char *a = cmd; a < cmd + got; a += strlen(a) + 1)
				ct_kv(buf, cap, &len, "argv", a);
		}
	}
	ct_kv(buf, cap, &len, "output", ct_session.path);
	static const struct {
		const char *key;
		enum ct_option opt;
	} settings[] = {{"setting.stack_depth", CT_OPT_STACK_DEPTH},
			{"setting.buffer_mb", CT_OPT_BUFFER_MB},
			{"setting.drop", CT_OPT_DROP},
			{"setting.flush_ms", CT_OPT_FLUSH_MS}};
	for (size_t i = 0; i < sizeof settings / sizeof settings[0]; i++) {
		snprintf(tmp, sizeof tmp, "%ld", ct_option(settings[i].opt));
		ct_kv(buf, cap, &len, settings[i].key, tmp);
	}
	ct_kv(buf, cap, &len, "setting.backend", ct_backend_name());
	ct_kv(buf, cap, &len, "setting.compress", ct_session.compress ? "zstd" : "off");
	ct_kv(buf, cap, &len, "setting.pack", ct_session.pack ? "on" : "off");
	ct_kv(buf, cap, &len, "setting.clock", ct_clock_name());
	ct_kv(buf, cap, &len, "setting.stack_cache", ct_stack_cache_name());
	p->rec.size = CT_REC_ALIGN((uint32_t)len);
	struct ct_file_header fh;
	memcpy(fh.magic, CT_MAGIC, CT_MAGIC_LEN);
	fh.version = CT_FORMAT_VERSION;
	fh.header_size = sizeof fh;
	fh.reserved = 0;
	if (ct_dump_write(&fh, sizeof fh) != 0)
		return -1;
	return ct_dump_write(buf, p->rec.size);
}

void ct_dump_note_manifest(void)
{
	const char *manifest = ct_option_str(CT_OPT_MANIFEST);
	if (!manifest)
		return;
	char line[sizeof ct_session.path_abs + 1];
	int n = snprintf(line, sizeof line, "%s\n", ct_session.path_abs);
	int fd = open(manifest, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	if (n > 0 && (size_t)n < sizeof line) {
		ssize_t w = write(fd, line, (size_t)n);
		(void)w;
	}
	close(fd);
}

/*
 * Create the dump: O_EXCL, never through a symlink; after exec the pid is the
 * same, so a taken name gets a ".N" suffix. A character device at the path
 * (/dev/null, a terminal) is written as it is instead: a ".1" beside it would
 * be a file in /dev. The descriptor goes to the top of the table (fd.c), and
 * the file's identity and absolute path are kept for ct_dump_fd. Returns 0
 * on success.
 */
int ct_dump_open(void)
{
	const char *tmpl = ct_option_str(CT_OPT_OUTPUT);
	char base[PATH_MAX];
	struct stat st;
	int fd = -1, device = 0;
	if (ct_expand_template(tmpl ? tmpl : "cumtrace.%p.dump", base, sizeof base - 8)) {
		ct_warn_once(&ct_warned.open, "output template too long; tracing off");
		return -1;
	}
	/* Not even tried: a program run with so few descriptors needs them all. */
	if (ct_fd_floor() < 0) {
		ct_warn_once(&ct_warned.open,
			     "the descriptor limit (RLIMIT_NOFILE) is below %d, too low for the "
			     "dump's descriptor beside the program's; tracing off, the program goes on",
			     CT_FD_MIN_LIMIT);
		return -1;
	}
	if (lstat(base, &st) == 0 && S_ISCHR(st.st_mode)) {
		device = 1;
		snprintf(ct_session.path, sizeof ct_session.path, "%s", base);
		fd = ct_open_append(ct_session.path);
		if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISCHR(st.st_mode))) {
			close(fd); /* replaced since the lstat */
			fd = -1;
			errno = ENODEV;
		}
	}
	for (int attempt = 0; !device && attempt < 100; attempt++) {
		if (attempt == 0)
			snprintf(ct_session.path, sizeof ct_session.path, "%s", base);
		else
			snprintf(ct_session.path, sizeof ct_session.path, "%s.%d", base, attempt);
		fd = open(ct_session.path,
			  O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_APPEND, 0600);
		if (fd >= 0 || errno != EEXIST)
			break;
	}
	if (fd < 0) {
		ct_warn_once(&ct_warned.open, "cannot %s %s: %s; tracing off, the program goes on",
			     device ? "open" : "create", ct_session.path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) != 0 || (fd = ct_fd_move_high(fd)) < 0) {
		int err = errno;
		if (!device)
			unlink(ct_session.path); /* ours: created just now, empty */
		ct_warn_once(&ct_warned.open,
			     "no descriptor for %s at the top of the table: %s; tracing off, the "
			     "program goes on",
			     ct_session.path, strerror(err));
		return -1;
	}
	ct_session.dump_dev = st.st_dev;
	ct_session.dump_ino = st.st_ino;
	char cwd[PATH_MAX];
	if (ct_session.path[0] == '/' || !getcwd(cwd, sizeof cwd))
		snprintf(ct_session.path_abs, sizeof ct_session.path_abs, "%s", ct_session.path);
	else
		snprintf(ct_session.path_abs, sizeof ct_session.path_abs, "%s/%s", cwd,
			 ct_session.path);
	atomic_store(&ct_session.fd, fd);
	return 0;
}
