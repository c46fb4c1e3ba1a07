"""The exit codes of the ``evalspec`` command, in one place.

0 clean, 1 problems found, 2 usage or I/O error; 130 interrupted (Ctrl-C);
141 a clean run whose output reader went away (128 + SIGPIPE). SIGTERM and
SIGHUP end with 128 + the signal number.
"""

EXIT_OK = 0
EXIT_PROBLEMS = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
EXIT_OUTPUT_CLOSED = 141
