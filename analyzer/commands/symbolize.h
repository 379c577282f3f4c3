/* cumtrace-report symbolize: embed the symbols of a dump's stacks into it. */
#ifndef CT_ANALYZER_SYMBOLIZE_H
#define CT_ANALYZER_SYMBOLIZE_H

/*
 * The command line after "cumtrace-report": argv[0] is "symbolize". Returns
 * the exit status: 0 done, 2 usage error, unreadable or corrupt dump, or a
 * write error (one line on stderr; the dump is left as it was).
 */
int ct_symbolize_main(int argc, char **argv);

#endif
