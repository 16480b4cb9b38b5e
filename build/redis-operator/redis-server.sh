#!/bin/sh
# redis-server as the official redis images build it: their Dockerfile turns the compiled-in
# default of protected-mode to "no" (a server in a container is reached from other pods, and
# the operator's configuration sets no password), which Debian's build keeps at "yes". Given
# on the command line, it is read after the configuration file, as a default would be before
# it; the Spotahome operator writes no protected-mode line and applies spec.*.customConfig at
# run time with CONFIG SET, which still overrides it.
exec /usr/bin/redis-server "$@" --protected-mode no
