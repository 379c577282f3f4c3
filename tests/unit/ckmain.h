/*
 * The main of every unit test program: run the suite in Check's normal mode
 * and exit non-zero when a test failed.
 */
#ifndef CT_TESTS_CKMAIN_H
#define CT_TESTS_CKMAIN_H

#include <check.h>
#include <stdlib.h>

static inline int ct_check_main(Suite *s)
{
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif
