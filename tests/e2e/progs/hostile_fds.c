/*
 * A program that treats file descriptors as its own, the way daemons and
 * servers do, after its first CUDA call. Every mode checks its own files and
 * pipes and exits 4 when one of its own reads or writes failed or came back
 * different; otherwise it prints "expect KEY VALUE" lines and exits 0.
 *
 * usage: hostile_fds closeall LOG PAIRS   close every descriptor >= 3, open LOG.0 to LOG.2
 *        hostile_fds dup2 LOG PAIRS       open LOG.0 to LOG.2 and dup2 them over 3..15
 *        hostile_fds closeexit LOG PAIRS  PAIRS pairs, then as closeall, one line each,
 *                                         and exit at once: the exit path writes them
 *        hostile_fds closeabort LOG PAIRS the same, ending in abort()
 *        hostile_fds pipe LOG PAIRS       a pipe's read end over 3, LOG over 4,
 *                                         4096 bytes in the pipe while threads
 *                                         allocate (and stacks are unwound)
 *        hostile_fds firstfd              no CUDA call: print the first open's fd
 *        hostile_fds lowfds               after CUDA calls, print every fd below 64
 *
 * Each LOG file gets one 64-byte line per 16 pairs, written through the
 * program's own descriptor; the test compares it with what it must hold.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

#define LINE 64

static void die4(const char *what)
{
	fprintf(stderr, "hostile_fds: %s: %s\n", what, strerror(errno));
	exit(4);
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* One line of LOG: "line NNNNNN" padded with dots to 63 bytes and a newline. */
static void put_line(int fd, long i)
{
	char line[LINE];
	memset(line, '.', sizeof line);
	int n = snprintf(line, sizeof line, "line %06ld ", i);
	line[n] = '.';
	line[LINE - 1] = '\n';
	if (write(fd, line, LINE) != LINE)
		die4("write to the program's own file");
}

/*
 * PAIRS cudaMalloc/cudaFree pairs, a line to each of nfds files every 16, a
 * pause every 64 (writer rounds). Returns the lines each file got.
 */
static long run_pairs(const int *fds, int nfds, long pairs)
{
	long lines = 0;
	void *p;
	for (long i = 0; i < pairs; i++) {
		CHECK(cudaMalloc(&p, 4096 + 512 * (size_t)(i % 8)));
		CHECK(cudaFree(p));
		if (i % 16 == 0) {
			for (int k = 0; k < nfds; k++)
				put_line(fds[k], lines);
			lines++;
		}
		if (i % 64 == 63)
			sleep_ms(1);
	}
	return lines;
}

/* Open LOG.0, LOG.1, LOG.2 (lowest free descriptors first). */
static void open_logs(const char *log, int *fds)
{
	char name[4096];
	for (int k = 0; k < 3; k++) {
		snprintf(name, sizeof name, "%s.%d", log, k);
		fds[k] = open(name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fds[k] < 0)
			die4("open log");
	}
}

static void close_from_3(void)
{
#ifdef SYS_close_range
	if (syscall(SYS_close_range, 3u, ~0u, 0u) == 0)
		return;
#endif
	for (int fd = 3; fd < 65536; fd++)
		close(fd);
}

/* Distinct stacks on a fresh thread: libunwind checks memory it has not seen on this thread. */
static NOINLINE void alloc_at_depth(int depth)
{
	if (depth > 0) {
		alloc_at_depth(depth - 1);
		return;
	}
	void *p;
	CHECK(cudaMalloc(&p, 8192));
	CHECK(cudaFree(p));
}

static void *unwind_worker(void *arg)
{
	for (int d = 0; d < 24; d++)
		alloc_at_depth(d);
	return arg;
}

static int mode_pipe(const char *log, long pairs)
{
	static char pattern[4096], back[8192];
	for (size_t i = 0; i < sizeof pattern; i++)
		pattern[i] = (char)('a' + i % 26);
	int pr[2];
	if (pipe(pr) != 0)
		die4("pipe");
	int lf = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (lf < 0)
		die4("open log");
	/* Out of the way first: untraced, pipe() itself may have returned 3 and 4. */
	int r = fcntl(pr[0], F_DUPFD, 20), w = fcntl(pr[1], F_DUPFD, 20), l = fcntl(lf, F_DUPFD, 20);
	if (r < 0 || w < 0 || l < 0)
		die4("fcntl F_DUPFD");
	close(pr[0]);
	close(pr[1]);
	close(lf);
	pr[1] = w;
	if (dup2(r, 3) != 3 || dup2(l, 4) != 4)
		die4("dup2");
	if (write(pr[1], pattern, sizeof pattern) != (ssize_t)sizeof pattern)
		die4("write to the program's own pipe");
	for (int t = 0; t < 16; t++) {
		pthread_t th;
		if (pthread_create(&th, NULL, unwind_worker, NULL) != 0)
			die4("pthread_create");
		pthread_join(th, NULL);
	}
	int four = 4;
	long lines = run_pairs(&four, 1, pairs);
	/* Everything the program put in its pipe, and nothing else, comes back. */
	if (fcntl(3, F_SETFL, O_NONBLOCK) != 0)
		die4("fcntl on the program's own pipe");
	ssize_t got = read(3, back, sizeof back);
	if (got != (ssize_t)sizeof pattern || memcmp(back, pattern, sizeof pattern) != 0) {
		fprintf(stderr, "hostile_fds: the program's pipe gave back %zd bytes of its %zu\n",
			got, sizeof pattern);
		exit(4);
	}
	printf("expect pipe_bytes %zu\n", sizeof pattern);
	printf("expect log_lines %ld\n", lines);
	printf("expect allocations %ld\n", 1 + 16 * 24 + pairs);
	return 0;
}

/* Every open descriptor below 64, in order (the listing's own excluded). */
static int mode_lowfds(void)
{
	void *p;
	for (int i = 0; i < 8; i++) {
		CHECK(cudaMalloc(&p, 4096));
		CHECK(cudaFree(p));
	}
	unwind_worker(NULL);
	sleep_ms(120); /* two writer rounds */
	printf("low fds:");
	for (int fd = 0; fd < 64; fd++)
		if (fcntl(fd, F_GETFD) != -1)
			printf(" %d", fd);
	printf("\n");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	const char *mode = argv[1];
	if (strcmp(mode, "firstfd") == 0) {
		int fd = open("/dev/null", O_RDONLY);
		printf("first fd %d\n", fd);
		return 0;
	}
	if (strcmp(mode, "lowfds") == 0)
		return mode_lowfds();
	if (argc < 4)
		return 2;
	const char *log = argv[2];
	long pairs = atol(argv[3]);
	void *p;
	CHECK(cudaMalloc(&p, 4096)); /* tracing starts: the dump is open from here on */
	CHECK(cudaFree(p));
	sleep_ms(60);
	if (strcmp(mode, "pipe") == 0)
		return mode_pipe(log, pairs);
	int fds[3];
	if (strcmp(mode, "closeall") == 0) {
		close_from_3();
		open_logs(log, fds);
	} else if (strcmp(mode, "dup2") == 0) {
		open_logs(log, fds);
		for (int k = 3; k <= 15; k++)
			if (k != fds[0] && k != fds[1] && k != fds[2] && dup2(fds[k % 3], k) != k)
				die4("dup2");
	} else if (strcmp(mode, "closeexit") == 0 || strcmp(mode, "closeabort") == 0) {
		/* Events still in the rings when the descriptors go: exit or abort writes them. */
		for (long i = 0; i < pairs; i++) {
			CHECK(cudaMalloc(&p, 4096));
			CHECK(cudaFree(p));
		}
		close_from_3();
		open_logs(log, fds);
		for (int k = 0; k < 3; k++)
			put_line(fds[k], 0);
		printf("expect log_lines 1\n");
		printf("expect allocations %ld\n", 1 + pairs);
		fflush(stdout);
		if (strcmp(mode, "closeabort") == 0)
			abort();
		exit(0);
	} else {
		return 2;
	}
	long lines = run_pairs(fds, 3, pairs);
	for (int k = 0; k < 3; k++)
		if (close(fds[k]) != 0)
			die4("close the program's own file");
	printf("expect log_lines %ld\n", lines);
	printf("expect allocations %ld\n", 1 + pairs);
	return 0;
}
