"""How a command ends: its exit codes, one sentence each (the commands' --help epilog and the
documents list them). A leaf module: the command line reads it before it knows what it loads."""

from __future__ import annotations

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_UNREACHABLE, EXIT_INTERNAL = 0, 1, 2, 3, 4
EXIT_UNTESTED = 5  # a gating requirement was neither tested nor declared away (see --allow-untested)
EXIT_INTERRUPTED = 130  # SIGINT or SIGTERM: the reports hold what had run
EXIT_CODES = {
    EXIT_OK: "every requirement at the gating level held",
    EXIT_FAILED: "a requirement at the gating level failed (or a stale baseline entry)",
    EXIT_USAGE: "usage or configuration error",
    EXIT_UNREACHABLE: "the target could not be reached, stopped answering, does not speak the protocol, "
                      "or the run's time limit passed before it finished",
    EXIT_INTERNAL: "internal error of conformance (a bug: please report it)",
    EXIT_UNTESTED: "nothing failed, but a requirement at the gating level was untested or blocked "
                   "(give the credentials or control it needs, or pass --allow-untested), "
                   "or none ran to a verdict at all (a gate never passes on nothing)",
    EXIT_INTERRUPTED: "interrupted (Ctrl-C, SIGINT or SIGTERM); the reports hold what had run, "
                      "the rest is untested",
}
