/*
 * A library with thread-local data that its constructor touches, for
 * tests/e2e/t_hostile_sig_dlopen.sh: each dlopen gives the loading thread a
 * dynamic TLS block (malloc) and moves glibc's TLS generation, each dlclose
 * leaves that block to be freed by the thread's next __tls_get_addr that
 * takes the slow path, wherever that is.
 */
__thread char ct_tls_block[65536];

int cttls_touch(void);

__attribute__((constructor)) static void cttls_init(void)
{
	ct_tls_block[0] = 1;
	ct_tls_block[sizeof ct_tls_block - 1] = 1;
}

int cttls_touch(void)
{
	return ct_tls_block[0];
}
