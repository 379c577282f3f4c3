/*
 * CUDA IPC between two processes on one device (issue 20; issue 19's imported memory):
 * the process forks before any CUDA call; the parent allocates two buffers
 * (8 MiB shared, 1 MiB planted leak), exports the shared one with
 * cudaIpcGetMemHandle and sends the handle through a pipe; the child opens it
 * with cudaIpcOpenMemHandle, writes it (cudaMemset), closes it and exits; the
 * parent waits for the child, checks the child's bytes, frees the shared buffer
 * and leaves the 1 MiB one allocated.
 *
 * Ground truth (one line each process, parsed by tests/gpu/ipc_check.sh):
 *   IPC parent pid=P allocated=9437184 leaked=1048576 leaks=1
 *   IPC child pid=C parent=P imported=8388608 allocated=0 leaked=0
 * Exit 0 when both sides worked, 3 when a CUDA call failed (its message printed).
 */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define SHARED (8u << 20)
#define LEAKED (1u << 20)

#define CK(call)                                                                            \
	do {                                                                                \
		cudaError_t e_ = (call);                                                    \
		if (e_ != cudaSuccess) {                                                    \
			fprintf(stderr, "ipc_pair: %s: %s\n", #call, cudaGetErrorString(e_)); \
			exit(3);                                                            \
		}                                                                           \
	} while (0)

static int child(int rfd, int wfd, pid_t parent)
{
	cudaIpcMemHandle_t h;
	if (read(rfd, &h, sizeof h) != (ssize_t)sizeof h) {
		fprintf(stderr, "ipc_pair: child: no handle\n");
		return 3;
	}
	CK(cudaSetDevice(0));
	void *p = NULL;
	CK(cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess));
	CK(cudaMemset(p, 0x5a, SHARED));
	CK(cudaDeviceSynchronize());
	CK(cudaIpcCloseMemHandle(p));
	printf("IPC child pid=%d parent=%d imported=%u allocated=0 leaked=0\n", (int)getpid(), (int)parent, SHARED);
	fflush(stdout);
	char done = 1;
	return write(wfd, &done, 1) == 1 ? 0 : 3;
}

int main(void)
{
	int to_child[2], to_parent[2];
	if (pipe(to_child) || pipe(to_parent)) {
		perror("ipc_pair: pipe");
		return 3;
	}
	pid_t parent = getpid();
	pid_t pid = fork(); /* before any CUDA call: a CUDA context does not survive fork */
	if (pid < 0) {
		perror("ipc_pair: fork");
		return 3;
	}
	if (pid == 0)
		_exit(child(to_child[0], to_parent[1], parent));
	CK(cudaSetDevice(0));
	void *shared = NULL, *leak = NULL;
	CK(cudaMalloc(&shared, SHARED));
	CK(cudaMalloc(&leak, LEAKED));
	CK(cudaMemset(shared, 0, SHARED));
	CK(cudaMemset(leak, 0, LEAKED));
	CK(cudaDeviceSynchronize());
	cudaIpcMemHandle_t h;
	CK(cudaIpcGetMemHandle(&h, shared));
	if (write(to_child[1], &h, sizeof h) != (ssize_t)sizeof h) {
		perror("ipc_pair: write");
		return 3;
	}
	char done = 0;
	ssize_t got = read(to_parent[0], &done, 1);
	int status = 0;
	waitpid(pid, &status, 0);
	if (got != 1 || !WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "ipc_pair: the child failed (status %d)\n", status);
		return 3;
	}
	unsigned char probe[16];
	CK(cudaMemcpy(probe, shared, sizeof probe, cudaMemcpyDeviceToHost));
	if (probe[0] != 0x5a || probe[15] != 0x5a) {
		fprintf(stderr, "ipc_pair: the child's bytes did not arrive\n");
		return 3;
	}
	CK(cudaFree(shared));
	printf("IPC parent pid=%d allocated=%u leaked=%u leaks=1\n", (int)getpid(), SHARED + LEAKED, LEAKED);
	return 0;
}
