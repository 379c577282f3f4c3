/*
 * Allocations whose stacks share what the shim's stack cache keys on (the
 * return address into the allocating function and its stack pointer,
 * preload/core/stackcache.c) but differ further out, and allocations made on
 * other stacks. For each allocation the program prints the return addresses
 * it expects in the dump, found by walking its own frame pointers (the test
 * programs are built with them) up to the first frame outside the program;
 * t_stack_cache.sh checks every event's stack against them.
 *
 * Output lines (addresses in hex):
 *   leaf ADDR                  frame 0 of every allocation lies in leaf() at ADDR
 *   alloc SIZE RA1 .. RAn      the allocation of SIZE bytes: frames 1..n are RA1..RAn
 *
 * usage: stackcache [ROUNDS]
 */
#define _GNU_SOURCE
#include <alloca.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <ucontext.h>

#include "common.h"

extern char __executable_start, etext; /* the program's code, from the linker */

static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;
static size_t next_size = 4096;
static int rounds = 24;

/* Allocate (and free) a block of a size no other allocation has; print the
 * return addresses of the frames above this one that lie in the program. */
NOINLINE static void leaf(void)
{
	pthread_mutex_lock(&out_lock);
	size_t size = next_size;
	next_size += 16;
	pthread_mutex_unlock(&out_lock);
	void *p;
	CHECK(cudaMalloc(&p, size));
	char line[1024];
	int len = snprintf(line, sizeof line, "alloc %zu", size);
	void **fp = __builtin_frame_address(0);
	while (fp) {
		char *ra = fp[1];
		if (ra < &__executable_start || ra >= &etext || len > (int)sizeof line - 32)
			break;
		len += snprintf(line + len, sizeof line - (size_t)len, " %lx", (unsigned long)ra);
		fp = fp[0];
	}
	pthread_mutex_lock(&out_lock);
	printf("%s\n", line);
	pthread_mutex_unlock(&out_lock);
	CHECK(cudaFree(p));
}

/* ---- the same leaf frame reached through different parents ------------------------ */

NOINLINE static void mid(void)
{
	leaf();
}
/* Five parents with identical frames: leaf runs at the same stack pointer under each. */
NOINLINE static void parent0(void) { mid(); }
NOINLINE static void parent1(void) { mid(); }
NOINLINE static void parent2(void) { mid(); }
NOINLINE static void parent3(void) { mid(); }
NOINLINE static void parent4(void) { mid(); }
static void (*const parents[])(void) = {parent0, parent1, parent2, parent3, parent4};

NOINLINE static void by_parents(void)
{
	for (int i = 0; i < 2 * rounds; i++)
		parents[i % 2](); /* two parents in turn: both stay cached */
	for (int i = 0; i < rounds; i++)
		parents[i % 5](); /* more parents than the cache keeps per place */
	for (int i = 0; i < rounds; i++)
		parents[(i * 7 + 3) % 5]();
}

/* ---- recursion: depths in turn ------------------------------------------------------- */

NOINLINE static void rec(int d)
{
	if (d > 0)
		rec(d - 1);
	else
		leaf();
}

NOINLINE static void by_depth(void)
{
	for (int i = 0; i < rounds; i++) {
		rec(i % 7);
		rec((i * 5) % 3);
	}
}

/* ---- different callers padded down to the same stack pointer ----------------------- */

/*
 * Call leaf with the stack pointer at exactly target, whatever the depth we
 * were called at: leaf's frame is then the same for every caller, while this
 * frame (found from its frame pointer, its size changed by alloca) is not.
 */
NOINLINE static void pad_to(char *target)
{
	char *here = __builtin_frame_address(0);
	volatile char *pad = alloca((size_t)(here - target));
	pad[0] = 0;
	leaf();
}

NOINLINE static void pad_a(char *target) { pad_to(target); }
NOINLINE static void pad_b2(char *target) { pad_to(target); }
NOINLINE static void pad_b(char *target) { pad_b2(target); }
NOINLINE static void pad_c(char *target, int d)
{
	if (d > 0)
		pad_c(target, d - 1);
	else
		pad_to(target);
}
/* A deeper path, its frames far below pad_a's: inside pad_to's alloca area when pad_a runs. */
NOINLINE static void pad_deep(char *target)
{
	char big[512];
	__asm__ __volatile__("" : : "r"(big) : "memory"); /* keep the frame's size */
	pad_c(target, 3);
}
static void (*const pads[])(char *) = {pad_deep, pad_a, pad_b, pad_deep, pad_a};

/*
 * Every path is called from the same place, so the paths differ only in the
 * frames between pad_to and here. After pad_deep, the words at its frames'
 * return address slots still hold its return addresses when pad_a runs (in
 * pad_to's alloca area): only pad_to's frame pointer tells the stacks apart.
 */
NOINLINE static void by_padding(void)
{
	uintptr_t below = ((uintptr_t)__builtin_frame_address(0) - 8192) & ~(uintptr_t)63;
	char *target = (char *)below;
	for (int i = 0; i < rounds; i++)
		pads[i % 5](target);
}

/* ---- signal handlers: on the thread's stack and on an alternate stack ------------------ */

static void on_signal(int sig)
{
	(void)sig;
	mid();
}

NOINLINE static void by_signals(void)
{
	stack_t ss = {.ss_sp = malloc(1 << 16), .ss_size = 1 << 16};
	if (!ss.ss_sp || sigaltstack(&ss, NULL) != 0)
		exit(4);
	struct sigaction alt = {.sa_handler = on_signal, .sa_flags = SA_ONSTACK};
	struct sigaction here = {.sa_handler = on_signal};
	sigaction(SIGUSR1, &alt, NULL);
	sigaction(SIGUSR2, &here, NULL);
	for (int i = 0; i < rounds; i++) {
		raise(i % 2 ? SIGUSR1 : SIGUSR2);
		mid();
	}
}

/* ---- coroutines: a heap stack and one inside this thread's own stack ------------------- */

static ucontext_t co_main, co_ctx[2];

static void co_body(void)
{
	for (;;) {
		leaf();
		swapcontext(&co_ctx[0], &co_main); /* which one is running does not matter here */
	}
}

static void co_body_b(void)
{
	for (;;) {
		mid();
		swapcontext(&co_ctx[1], &co_main);
	}
}

NOINLINE static void by_coroutines(void)
{
	char local_stack[1 << 15]; /* a coroutine stack inside the main thread's stack */
	void *heap_stack = malloc(1 << 16);
	if (!heap_stack)
		exit(4);
	getcontext(&co_ctx[0]);
	co_ctx[0].uc_stack.ss_sp = heap_stack;
	co_ctx[0].uc_stack.ss_size = 1 << 16;
	co_ctx[0].uc_link = NULL;
	makecontext(&co_ctx[0], co_body, 0);
	getcontext(&co_ctx[1]);
	co_ctx[1].uc_stack.ss_sp = local_stack;
	co_ctx[1].uc_stack.ss_size = sizeof local_stack;
	co_ctx[1].uc_link = NULL;
	makecontext(&co_ctx[1], co_body_b, 0);
	for (int i = 0; i < rounds; i++) {
		swapcontext(&co_main, &co_ctx[i % 2]);
		leaf();
	}
}

/* ---- threads: each has its own cache ------------------------------------------------ */

static void *thread_main(void *arg)
{
	by_parents();
	by_padding();
	return arg;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		rounds = atoi(argv[1]);
	printf("leaf %lx\n", (unsigned long)(uintptr_t)leaf);
	by_parents();
	by_depth();
	by_padding();
	by_signals();
	by_coroutines();
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, thread_main, NULL) != 0)
			return 4;
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	by_parents();
	return 0;
}
