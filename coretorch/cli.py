"""`coretorch info` (also `python -m coretorch info`): plugins, devices and op coverage by backend;
`coretorch demo`: the training demo (coretorch/demo.py); `coretorch --version`."""
from __future__ import annotations

import argparse
import json
import re
import sys

from .plugins.manager import SLOW_IMPORT_S


def _table(rows: list[list[str]], header: list[str]) -> str:
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    line = "  ".join(h.ljust(w) for h, w in zip(header, widths))
    out = [line, "  ".join("-" * w for w in widths)]
    out += ["  ".join(str(c).ljust(w) for c, w in zip(r, widths)) for r in rows]
    return "\n".join(x.rstrip() for x in out)


def _summary(provides: list[str]) -> str:
    """'backend:cpu' stays as it is; many entries become counts per kind (the full lists follow below)."""
    if len(provides) <= 2:
        return ", ".join(provides)
    kinds: dict = {}
    for item in provides:
        kind = item.split(":", 1)[0]
        kinds[kind] = kinds.get(kind, 0) + 1
    return ", ".join(f"{n} {k}{'s' if n > 1 else ''}" for k, n in kinds.items())


def info_dict() -> dict:
    import coretorch
    from coretorch import _backend
    devices = coretorch.devices()
    ops = sorted(set(_backend.PRIMITIVES) | set(_backend._extra_kernels))
    # kernels the core composes from others when a backend lacks them (PRIMITIVES' "optional", plugin ops' kernels)
    optional = sorted(op for op in ops
                      if op in _backend._extra_kernels or _backend.PRIMITIVES[op].startswith("optional"))
    coverage, host = {}, {}
    for d in devices:
        if not d["available"]:
            continue
        try:
            table = _backend.get_table(coretorch.device(d["type"]))
        except Exception as e:  # listed but cannot be opened (an OpenCL device that refuses a context): say why
            d["error"] = f"{type(e).__name__}: {e}"
            continue
        coverage[d["type"]] = sorted(table.names)
        host[d["type"]] = sorted(table.host_names)
    return {"coretorch": coretorch.__version__, "plugin_api": coretorch.plugins.PLUGIN_API_VERSION,
            "plugins": coretorch.plugins.report(), "devices": devices, "ops": ops, "coverage": coverage,
            "host_kernels": host, "optional_kernels": optional, "public_ops": public_ops(),
            "plugin_ops": coretorch.ops.registered(), "optimizers": coretorch.optim.registered()}


def public_ops() -> dict:
    """The public op names by family: each op family module's ``__all__`` (``coretorch.<name>``) and ``METHODS``
    (``Tensor.<name>``).  Every one runs on each device whose kernel table has the primitives it uses (the table
    above): composites of primitives run wherever those do."""
    from coretorch import ops
    return {m.__name__.rsplit(".", 1)[1]: sorted(set(m.__all__) | set(m.METHODS)) for m in ops.FAMILIES}


def info(as_json: bool = False) -> str:
    d = info_dict()
    if as_json:
        return json.dumps(d, indent=2)
    parts = [f"coretorch {d['coretorch']} (plugin API {d['plugin_api']})", "", "Plugins"]
    rows = [[p["name"], p["distribution"], p["version"], p["status"], f"{p.get('load_s', 0.0):.2f} s",
             p["error"] or _summary(p["provides"])] for p in d["plugins"]]
    parts.append(_table(rows, ["name", "distribution", "version", "status", "load", "error / provides"]) if rows
                 else "  (none loaded: `pip install coretorch-cpu` or `pip install \"coretorch[cpu]\"` for the "
                      "'cpu' device)")
    slow = [p for p in d["plugins"] if p.get("load_s", 0.0) >= SLOW_IMPORT_S]
    if slow:
        parts.append("slow to import (over %.0f s each, paid by every `import coretorch`): " % SLOW_IMPORT_S
                     + ", ".join(f"{p['name']} ({p['distribution']}) {p['load_s']:.2f} s" for p in slow))
    parts += ["", "Devices"]
    rows = [[dv["type"], dv["distribution"], "yes" if dv["available"] else "no", str(dv["count"]),
             "; ".join(dv["names"])] for dv in d["devices"]]
    parts.append(_table(rows, ["type", "distribution", "available", "count", "names"]) if rows else
                 "  (none: `pip install \"coretorch[cpu]\"` for the 'cpu' device)")
    for dv in d["devices"]:  # why a device type is unavailable or cannot be opened, and what to do
        if not dv["available"] and dv.get("reason"):
            parts.append(f"{dv['type']} is not available: {dv['reason']}")
        elif dv.get("error"):
            parts.append(f"{dv['type']} cannot be opened: {dv['error']}")
    parts += ["", "Kernels by backend (primitive table; 'host' = runs on the host for that device, 'composite' = "
              "optional kernel absent: the op runs on the device as a composite of other kernels, '-' = missing, "
              "runs only with CORETORCH_FALLBACK=cpu)"]
    backends = list(d["coverage"])
    if backends:
        optional = set(d["optional_kernels"])

        def mark(op, b):
            if op in d["coverage"][b]:
                return "host" if op in d["host_kernels"][b] else "yes"
            return "composite" if op in optional else "-"
        rows = [[op] + [mark(op, b) for b in backends] for op in d["ops"]]
        parts.append(_table(rows, ["op"] + backends))
    parts += ["", "Ops by family (coretorch.<op> and Tensor methods; each runs where its kernels above run)"]
    for fam, names in d["public_ops"].items():
        if names:
            parts.append(f"{fam} ({len(names)}): " + ", ".join(names))
    if d["plugin_ops"]:
        parts += ["", "Plugin ops: " + ", ".join(d["plugin_ops"])]
    if d["optimizers"]:
        parts += ["", "Plugin optimizers: " + ", ".join(d["optimizers"])]
    return "\n".join(parts)


def run(argv) -> int:
    """`coretorch run -n N script.py [args]`: the launcher of the distributed plugin (coretorch-distributed-mpi:
    mpiexec).  The core only forwards to ``coretorch.distributed.launch``."""
    from . import distributed
    try:
        launch = distributed.launch
    except ImportError as e:
        print(f"coretorch run: {e}", file=sys.stderr)
        return 2
    return launch(argv)


def plain(doc: str) -> str:
    """A docstring as plain text for --help: ``literal`` and `literal` lose their backticks."""
    return re.sub(r"``?([^`]+)``?", r"\1", doc)


def version_text() -> str:
    """`coretorch --version`: the core's version and each installed plugin distribution's (released together)."""
    import coretorch
    lines = [f"coretorch {coretorch.__version__} (plugin API {coretorch.plugins.PLUGIN_API_VERSION})"]
    seen = set()
    for r in coretorch.plugins.report():
        if r["distribution"] not in seen and not r["distribution"].startswith("<"):
            seen.add(r["distribution"])
            lines.append(f"  {r['distribution']} {r['version']} ({r['status']})")
    return "\n".join(lines)


class _Version(argparse.Action):
    """--version imports coretorch only when asked (the parser itself stays cheap)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        print(version_text())
        parser.exit()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="coretorch", description="coretorch command line")
    p.add_argument("--version", action=_Version, help="print the versions of coretorch and its plugins and exit")
    sub = p.add_subparsers(dest="cmd")
    pi = sub.add_parser("info", help="installed plugins, devices and op coverage")
    pi.add_argument("--json", action="store_true", help="machine-readable output")
    from . import demo
    pd = sub.add_parser("demo", help="train a small CNN on the UCI digits (offline), save, reload, plot",
                        description=plain(demo.HELP), formatter_class=argparse.RawDescriptionHelpFormatter)
    demo.add_arguments(pd)
    sub.add_parser("run", help="run a script on N ranks: coretorch run -n 2 script.py [args] (the launcher of the "
                   "installed distributed plugin, e.g. mpiexec)")
    from .plugins import scaffold
    scaffold.add_parser(sub)  # coretorch new-plugin --kind optimizer|function|backend NAME [DIR]
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["run"]:
        return run(argv[1:])
    args = p.parse_args(argv)
    if args.cmd == "info":
        print(info(args.json))
        return 0
    if args.cmd == "demo":
        return demo.main(args)
    if args.cmd == "new-plugin":
        return scaffold.main(args)
    p.print_help()
    return 1


if __name__ == "__main__":
    sys.exit(main())
