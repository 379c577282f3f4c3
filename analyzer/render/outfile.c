#define _GNU_SOURCE 1
#include "render/outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/util.h"

/*
 * The temporary file being written, removed if the process exits before it
 * is renamed (the memory budget, util.h, exits from inside a report).
 */
static char *pending_tmp;

static void remove_pending(void)
{
	if (pending_tmp)
		unlink(pending_tmp);
}

/* An existing file that is not a regular one (or a link to one): open it as it is. */
static int open_in_place(struct ct_outfile *o, const char *path, char *err, size_t cap)
{
	/* no O_CREAT, no O_TRUNC: whatever this finds, it creates and destroys nothing */
	int fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0) {
		snprintf(err, cap, "%s: cannot write: %s", path,
			 errno == ENOENT ? "a symbolic link to nothing (refused)" : strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (S_ISREG(st.st_mode)) {
		snprintf(err, cap, "%s: refusing to write through a symbolic link to a regular file",
			 path);
		close(fd);
		return -1;
	}
	o->f = fdopen(fd, "w");
	if (!o->f) {
		snprintf(err, cap, "%s: cannot write: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	return 0;
}

int ct_outfile_open(struct ct_outfile *o, const char *path, const char *tag, char *err, size_t cap)
{
	memset(o, 0, sizeof *o);
	struct stat st;
	if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		if (S_ISDIR(st.st_mode)) {
			snprintf(err, cap, "%s: cannot write: %s", path, strerror(EISDIR));
			return -1;
		}
		if (open_in_place(o, path, err, cap))
			return -1;
		o->path = ct_xstrdup(path);
		return 0;
	}
	size_t n = strlen(path) + strlen(tag) + sizeof "..XXXXXX";
	o->tmp = ct_xmalloc(n);
	snprintf(o->tmp, n, "%s.%s.XXXXXX", path, tag);
	int fd = mkostemp(o->tmp, O_CLOEXEC);
	if (fd >= 0)
		o->f = fdopen(fd, "w");
	if (!o->f) {
		snprintf(err, cap, "%s: cannot create a temporary file next to it: %s", path,
			 strerror(errno));
		if (fd >= 0) {
			close(fd);
			unlink(o->tmp);
		}
		free(o->tmp);
		o->tmp = NULL;
		return -1;
	}
	o->path = ct_xstrdup(path);
	static int registered;
	if (!registered && atexit(remove_pending) == 0)
		registered = 1;
	pending_tmp = o->tmp;
	return 0;
}

int ct_outfile_close(struct ct_outfile *o, int failed, unsigned mode)
{
	int err = 0;
	if (fflush(o->f) != 0 || ferror(o->f))
		err = errno ? errno : EIO;
	/* the data on disk before the name: a crash never leaves a short file under it */
	if (!err && o->tmp && !failed && fsync(fileno(o->f)) != 0)
		err = errno;
	if (!err && o->tmp && mode && fchmod(fileno(o->f), mode) != 0)
		err = errno;
	if (fclose(o->f) != 0 && !err)
		err = errno ? errno : EIO;
	if (o->tmp) {
		if (!err && !failed && rename(o->tmp, o->path) != 0)
			err = errno;
		if (err || failed)
			unlink(o->tmp);
		pending_tmp = NULL;
	}
	free(o->tmp);
	free(o->path);
	memset(o, 0, sizeof *o);
	return err;
}
