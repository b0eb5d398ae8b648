"""The ``coretorch`` console command's entry point, outside the package on purpose: ``import coretorch`` (numpy,
the plugins) takes a while, and a Ctrl-C arriving during it must print the command's short "interrupted" message,
not a traceback.  An entry point inside the package could not catch it: the package is imported before any of its
code runs."""
import sys

_DEMO_INTERRUPTED = "interrupted after 0 complete epoch(s): no epoch was completed, nothing was saved"


def _interrupted(argv: list) -> int:
    msg = _DEMO_INTERRUPTED if argv[:1] == ["demo"] else "interrupted"
    print(f"\n{msg}", file=sys.stderr, flush=True)
    return 130


def main(argv=None) -> int:
    """Import coretorch and run its command line, a Ctrl-C at any moment giving exit status 130 and one line."""
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        from coretorch.cli import main as cli_main
        return cli_main(argv)
    except KeyboardInterrupt:  # (the demo reports its own interruptions; this is the start-up, or another command)
        return _interrupted(argv)


if __name__ == "__main__":
    sys.exit(main())
