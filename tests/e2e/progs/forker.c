/*
 * The parent allocates and leaks 1 MiB, forks a child that leaks 2 MiB and a
 * second child that never calls CUDA, then waits for both.
 */
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

int main(void)
{
	void *p;
	CHECK(cudaMalloc(&p, 1 << 20));
	pid_t child = fork();
	if (child == 0) {
		CHECK(cudaMalloc(&p, 2 << 20));
		void *q;
		CHECK(cudaMalloc(&q, 4096));
		CHECK(cudaFree(q));
		_exit(0);
	}
	pid_t idle = fork();
	if (idle == 0)
		_exit(0);
	int st1, st2;
	waitpid(child, &st1, 0);
	waitpid(idle, &st2, 0);
	printf("parent %d child %d idle %d\n", (int)getpid(), (int)child, (int)idle);
	return WIFEXITED(st1) && WEXITSTATUS(st1) == 0 ? 0 : 1;
}
