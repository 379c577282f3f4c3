/*
 * A multi-threaded parent that forks, execs and spawns children, for
 * tests/e2e/t_hostile_fork.sh. Three worker threads allocate and free
 * 256-byte blocks the whole time; the main thread leaks one 1 MiB block.
 *
 * While the workers are busy (the children must not call CUDA without exec:
 * another thread may hold the fake driver's lock at the fork):
 *   3 x fork, the child works without CUDA and _exit(0)s (DataLoader-like)
 *   fork + execv(self child 3)          allocates 3
 *   fork + execv(self idle)             never calls CUDA
 *   posix_spawn(self child 4)           allocates 4
 *   vfork + execv(self child 5)         allocates 5
 * With the workers parked (alive, their rings holding unflushed events):
 *   fork, the child allocates 6 and exits
 *   fork, setsid, fork: the grandchild (a daemon) allocates 7 and exits
 *
 * Prints "proc KIND PID PPID ALLOCS" for every process that must leave a
 * dump, "noproc KIND PID" for every one that must not, and "expect KEY N"
 * for the parent's totals.
 * usage: hostile_fork | hostile_fork child N | hostile_fork idle
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <spawn.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

extern char **environ;

#define WORKERS 3
static _Atomic int stop, park, parked;
static long made[WORKERS];
static const char *self;

static void *worker(void *arg)
{
	long id = (long)arg;
	while (!atomic_load(&stop)) {
		if (atomic_load(&park)) {
			atomic_fetch_add(&parked, 1);
			while (atomic_load(&park))
				usleep(1000);
			atomic_fetch_sub(&parked, 1);
			continue;
		}
		void *p;
		CHECK(cudaMalloc(&p, 256));
		made[id]++;
		CHECK(cudaFree(p));
		if ((made[id] & 31) == 0)
			usleep(100);
	}
	return NULL;
}

static void alloc_n(int n)
{
	void *p;
	for (int i = 0; i < n; i++)
		CHECK(cudaMalloc(&p, 4096));
}

static int waitok(pid_t pid)
{
	int st;
	if (waitpid(pid, &st, 0) != pid)
		return 0;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static int failures;

static void reap(pid_t pid, const char *kind)
{
	if (!waitok(pid)) {
		fprintf(stderr, "hostile_fork: %s child %d failed\n", kind, (int)pid);
		failures++;
	}
}

static pid_t fork_exec(const char *arg, const char *n, int use_vfork)
{
	char *args[] = {(char *)self, (char *)arg, (char *)n, NULL};
	pid_t pid = use_vfork ? vfork() : fork();
	if (pid == 0) {
		execv(self, args);
		_exit(127);
	}
	return pid;
}

int main(int argc, char **argv)
{
	self = "/proc/self/exe";
	if (argc > 2 && strcmp(argv[1], "child") == 0) {
		alloc_n(atoi(argv[2]));
		return 0;
	}
	if (argc > 1 && strcmp(argv[1], "idle") == 0)
		return 0;
	static char exe[4096];
	ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (len <= 0)
		return 2;
	exe[len] = 0;
	self = exe;
	setvbuf(stdout, NULL, _IONBF, 0); /* children that exit() must not repeat it */
	alarm(15);
	int me = (int)getpid();
	void *big;
	CHECK(cudaMalloc(&big, 1 << 20));
	pthread_t t[WORKERS];
	for (long i = 0; i < WORKERS; i++)
		pthread_create(&t[i], NULL, worker, (void *)i);
	usleep(20000);

	/* Busy workers. */
	for (int i = 0; i < 3; i++) {
		pid_t pid = fork();
		if (pid == 0) {
			char *junk = malloc(1 << 16); /* work without CUDA */
			memset(junk, i, 1 << 16);
			_exit(junk[100] == i ? 0 : 1);
		}
		reap(pid, "fork-nocuda");
		printf("noproc fork-nocuda %d\n", (int)pid);
	}
	pid_t pid = fork_exec("child", "3", 0);
	reap(pid, "fork-exec");
	printf("proc fork-exec %d %d 3\n", (int)pid, me);
	pid = fork_exec("idle", NULL, 0);
	reap(pid, "fork-exec-idle");
	printf("noproc fork-exec-idle %d\n", (int)pid);
	char *sargs[] = {exe, "child", "4", NULL};
	if (posix_spawn(&pid, exe, NULL, NULL, sargs, environ) != 0)
		return 5;
	reap(pid, "posix_spawn");
	printf("proc posix_spawn %d %d 4\n", (int)pid, me);
	pid = fork_exec("child", "5", 1);
	reap(pid, "vfork-exec");
	printf("proc vfork-exec %d %d 5\n", (int)pid, me);

	/* Parked workers: their rings hold events the writer has not copied. */
	atomic_store(&park, 1);
	while (atomic_load(&parked) != WORKERS)
		usleep(100);
	pid = fork();
	if (pid == 0) {
		alloc_n(6);
		exit(0);
	}
	reap(pid, "fork-alloc");
	printf("proc fork-alloc %d %d 6\n", (int)pid, me);

	int ready[2], report[2];
	if (pipe(ready) || pipe(report))
		return 5;
	pid = fork();
	if (pid == 0) {
		setsid();
		pid_t mid = getpid();
		pid_t gc = fork();
		if (gc == 0) {
			close(ready[0]);
			close(report[0]);
			char c = 1;
			if (write(ready[1], &c, 1) != 1) /* our parent may go now */
				_exit(1);
			close(ready[1]);
			alloc_n(7);
			char line[64];
			int n = snprintf(line, sizeof line, "%d %d\n", (int)getpid(), (int)mid);
			if (write(report[1], line, (size_t)n) != n)
				_exit(1);
			exit(0); /* report[1] closes after the destructors ran */
		}
		char c;
		close(ready[1]);
		if (read(ready[0], &c, 1) != 1)
			_exit(1);
		_exit(0);
	}
	close(ready[0]);
	close(ready[1]);
	close(report[1]);
	reap(pid, "daemon-parent");
	printf("noproc daemon-parent %d\n", (int)pid);
	char buf[64] = {0};
	size_t got = 0;
	ssize_t r;
	while ((r = read(report[0], buf + got, sizeof buf - 1 - got)) > 0)
		got += (size_t)r;
	int dpid = 0, dppid = 0;
	if (sscanf(buf, "%d %d", &dpid, &dppid) != 2) {
		fprintf(stderr, "hostile_fork: no word from the daemon\n");
		failures++;
	} else {
		printf("proc daemon %d %d 7\n", dpid, dppid);
	}
	atomic_store(&park, 0);
	usleep(20000);
	atomic_store(&stop, 1);
	long total = 0;
	for (int i = 0; i < WORKERS; i++) {
		pthread_join(t[i], NULL);
		total += made[i];
	}
	printf("expect parent %d\n", me);
	printf("expect allocations %ld\n", total + 1);
	printf("expect frees %ld\n", total);
	printf("expect failures %d\n", failures);
	return failures ? 1 : 0;
}
