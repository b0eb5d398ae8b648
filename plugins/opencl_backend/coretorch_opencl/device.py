"""OpenCL devices: discovery and selection, per-device context/queue, the caching allocator and the
program cache (one build per (source, device), pyopencl's on-disk binary cache across processes).

Threads: every device has one in-order queue shared by all threads (so a buffer freed by one thread and reused by
another is never written before the kernels that read it ran) and one re-entrant lock, ``Device.lock``, that every
kernel-table call holds (see ``backend.OpenCLBackend.kernels``): a pyopencl kernel object's arguments are set and
then enqueued, which must not interleave with another thread's launch of the same kernel.  The device-side check
state (buffer, pending flag, message codes) is per thread, so a failed check is raised in the thread that queued it.

Memory: coretorch counts the bytes its pool holds on each device and raises ``coretorch.OutOfMemoryError`` before
the total would exceed ``Device.memory_limit`` (the device's global memory, or ``CORETORCH_OPENCL_MEMORY_LIMIT``
bytes, e.g. ``512M``): some drivers (PoCL) accept any allocation and fail much later."""
from __future__ import annotations

import os
import re
import weakref
import threading

import numpy as np

from coretorch import OutOfMemoryError

try:
    import pyopencl as cl
    import pyopencl.array as cla
    import pyopencl.tools as cltools
    _IMPORT_ERROR = None
except Exception as e:  # pragma: no cover - exercised only without pyopencl
    # only without pyopencl: discover() then reports _IMPORT_ERROR and no Device (the only user of these) is made
    cl = cla = cltools = None  # type: ignore[assignment]
    _IMPORT_ERROR = e

from coretorch.dtypes import on_bfloat16

from . import binary_cache as _binary_cache
from .codegen import HEADER

# host <-> device transfers, counted for tests and benchmarks (the only places data crosses)
STATS = {"to_host": 0, "to_device": 0, "launches": 0, "builds": 0}

# device-side checks (as CUDA's device-side asserts): code -> (exception, message of the failing value).  Code 1 is
# nll_loss's fixed check; the index checks register their messages per device at run time (``Device.check_code``).
CHECKS = {1: (IndexError, "Target {} is out of bounds. (nll_loss on opencl: reported at the first host read after the "
                          "op, as a device-side check)")}
_LMIN, _LMAX = np.iinfo(np.int64).min, np.iinfo(np.int64).max
# the check buffer's state with no failure recorded: value, (claim, message code), largest value above the range
# (starts at LONG_MIN), smallest value below it (starts at LONG_MAX)
_ERR_CLEAR = np.array([0, 0, _LMIN, _LMAX], np.int64)

_ARG_TYPES: dict[str, type[np.generic]] = {
    "long": np.int64, "int": np.int32, "float": np.float32, "double": np.float64, "uchar": np.uint8,
    "char": np.int8, "short": np.int16, "ulong": np.uint64, "uint": np.uint32}


def _type_rank(d) -> int:
    t = d.type
    if t & cl.device_type.GPU:
        return 0
    if t & cl.device_type.ACCELERATOR:
        return 1
    return 2


_discovered = None

# what to install when there is no usable OpenCL device (said by the errors and by `coretorch info`)
INSTALL_HINT = ("install an OpenCL driver: a GPU vendor's OpenCL ICD (Debian/Ubuntu: nvidia-opencl-icd, "
                "intel-opencl-icd, mesa-opencl-icd), or PoCL, a CPU OpenCL device: "
                "`pip install \"coretorch-opencl[pocl]\"`")


def diagnose_import_error(e: BaseException) -> str:
    """Why pyopencl cannot be imported: its ICD loader (libOpenCL) is missing, or pyopencl itself is broken."""
    text = f"{type(e).__name__}: {e}"
    if "libOpenCL" in text or "OpenCL.dll" in text or "OpenCL.framework" in text:
        return (f"no OpenCL ICD loader: pyopencl cannot load libOpenCL ({text}); install one (Debian/Ubuntu: "
                f"`apt install ocl-icd-libopencl1`, or pyopencl's wheels from PyPI, which bundle it), then "
                f"{INSTALL_HINT}")
    return f"pyopencl cannot be imported ({text}); reinstall it: `pip install --force-reinstall pyopencl`"


def diagnose_platforms(platforms, errors: list, platform_error: BaseException | None = None) -> str:
    """Why discovery found no device: no platform (no driver registered with the ICD loader), or platforms
    whose devices could not be listed (the driver refused)."""
    if platform_error is not None or not platforms:
        detail = f" ({type(platform_error).__name__}: {platform_error})" if platform_error is not None else ""
        where = os.environ.get("OCL_ICD_VENDORS") or "/etc/OpenCL/vendors"
        return (f"no OpenCL platform found{detail}: the ICD loader works but no OpenCL driver is registered "
                f"with it (none in {where}); {INSTALL_HINT}")
    names = ", ".join(p.name.strip() for p in platforms)
    if errors:
        return (f"OpenCL platform(s) {names} refused to list their devices ({'; '.join(errors)}): the driver is "
                f"installed but cannot reach a device (permissions on /dev/dri or the 'render'/'video' group, "
                f"a driver/kernel-module mismatch); fix the driver or {INSTALL_HINT}")
    return f"OpenCL platform(s) {names} expose no device; {INSTALL_HINT}"


def diagnose_context_error(cldev, e: BaseException) -> str:
    """The message of a device that is listed but refuses a context."""
    return (f"the OpenCL device '{cldev.name.strip()}' ({cldev.platform.name.strip()}) refused a context "
            f"({type(e).__name__}: {e}): the driver lists it but cannot open it (permissions on /dev/dri or the "
            f"'render'/'video' group, another process holding it, a driver/kernel-module mismatch); choose "
            f"another device with CORETORCH_OPENCL_DEVICE or {INSTALL_HINT}")


def discover():
    """-> (list of (platform index, device index, cl.Device), reason when the list is empty: what is missing and
    what to install)."""
    global _discovered
    if _discovered is not None:
        return _discovered
    if cl is None:
        _discovered = ([], diagnose_import_error(_IMPORT_ERROR))
        return _discovered
    try:
        platforms = cl.get_platforms()
    except Exception as e:  # PLATFORM_NOT_FOUND_KHR: the ICD loader found no driver
        _discovered = ([], diagnose_platforms([], [], e))
        return _discovered
    found, errors = [], []
    for pi, p in enumerate(platforms):
        try:
            devs = p.get_devices()
        except Exception as e:  # DEVICE_NOT_FOUND and driver failures: said when no other device is found
            errors.append(f"{p.name.strip()}: {type(e).__name__}: {e}")
            continue
        for di, d in enumerate(devs):
            found.append((pi, di, d))
    if not found:
        _discovered = ([], diagnose_platforms(platforms, errors))
        return _discovered
    found.sort(key=lambda e: (_type_rank(e[2]), e[0], e[1]))  # GPUs first, then accelerators, then CPUs
    sel = os.environ.get("CORETORCH_OPENCL_DEVICE", "").strip()
    if sel:
        m = re.fullmatch(r"(\d+):(\d+)", sel)
        if m:
            pick = [e for e in found if (e[0], e[1]) == (int(m.group(1)), int(m.group(2)))]
        else:
            low = sel.lower()
            pick = [e for e in found if low in e[2].name.lower() or low in e[2].platform.name.lower()]
        if not pick:
            avail = ", ".join(f"{e[0]}:{e[1]} {e[2].name.strip()}" for e in found)
            _discovered = ([], f"CORETORCH_OPENCL_DEVICE={sel!r} matches no OpenCL device (available: {avail}); "
                               f"set it to PLATFORM:DEVICE or a part of a device or platform name, or unset it")
            return _discovered
        found = pick
    _discovered = (found, "")
    return _discovered


def reset_discovery() -> None:
    global _discovered
    _discovered = None


_ALL_DEVICES: "weakref.WeakSet[Device]" = weakref.WeakSet()


def _forget_programs(_npd) -> None:
    """bfloat16 was just loaded (on its first use): programs built before list no bfloat16 kernels (the casts to
    it among them), so they are built anew on their next lookup; kernels already made stay valid."""
    for dev in list(_ALL_DEVICES):
        dev._programs.clear()


on_bfloat16(_forget_programs)


def _unlock_in_forked_child() -> None:
    """In a forked child (a DataLoader worker): every device's lock unlocked.  Another thread of the parent may have
    held one at the fork (a kernel call, a blocking read); that thread does not exist in the child, whose first
    ``manual_seed`` (the worker's seeding) then waited on the lock forever."""
    for dev in list(_ALL_DEVICES):
        dev.lock._at_fork_reinit()  # type: ignore[attr-defined]  # (threading's own locks are reset so)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_unlock_in_forked_child)

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def memory_limit_from_env(default: int) -> int:
    """``CORETORCH_OPENCL_MEMORY_LIMIT`` (bytes, or with a K/M/G/T suffix, e.g. ``512M``) capped at ``default``
    (the device's global memory); ``default`` when unset."""
    v = os.environ.get("CORETORCH_OPENCL_MEMORY_LIMIT", "").strip()
    if not v:
        return default
    m = re.fullmatch(r"(\d+)\s*([KMGT]?)(?:i?B)?", v, re.IGNORECASE)
    if m is None:
        raise ValueError(f"CORETORCH_OPENCL_MEMORY_LIMIT={v!r} is not a size in bytes (e.g. 1073741824, 512M, 2G)")
    return min(int(m.group(1)) * _UNITS[m.group(2).upper()], default)


def _mib(n: int) -> str:
    return f"{n / (1 << 20):.2f} MiB"


class _Checks(threading.local):
    """One thread's device-side check state (see ``Device.error_buffer``): created on a thread's first use."""

    def __init__(self) -> None:
        self.err: cl.Buffer | None = None  # the check buffer, allocated on the first check this thread queues
        self.pending = False    # a kernel that may have recorded a failed check ran since the last host read
        # the index checks' messages since the last host read: (exception, template) <-> code, and the launch
        # tickets (unique between two host reads; 1 is nll_loss's claim); cleared by every report
        self.codes: dict = {}
        self.messages: dict = {}
        self.ticket = 1
        self.reports = 0  # host reads that reported (and so reset the tickets): see Device.check_mark

    def buffer(self) -> cl.Buffer:
        """The check buffer where a check is pending (``Device.error_buffer`` makes it before marking one)."""
        err = self.err
        assert err is not None, "a device-side check is pending without its buffer"
        return err


class Device:
    """One OpenCL device: context, in-order queue, memory pool, program and kernel caches, and the lock that
    makes them safe to share between threads."""

    def __init__(self, cldev, index: int):
        self.cldev = cldev
        self.index = index
        self.lock = threading.RLock()  # held by every kernel-table call (backend.py) and by synchronize
        try:
            self.ctx = cl.Context([cldev])
            self.queue = cl.CommandQueue(self.ctx)
        except cl.Error as e:  # listed but refused: say why and what to do instead of pyopencl's bare code
            raise RuntimeError(diagnose_context_error(cldev, e)) from e
        self.pool = cltools.MemoryPool(cltools.ImmediateAllocator(self.queue))
        self._pool_alloc = self.pool.allocate
        ext = cldev.extensions
        self.fp64 = "cl_khr_fp64" in ext
        self.i64atomics = "cl_khr_int64_base_atomics" in ext
        self.name = cldev.name.strip()
        self.is_cpu = bool(cldev.type & cl.device_type.CPU)
        self.max_wg = cldev.max_work_group_size
        self.compute_units = cldev.max_compute_units
        self.max_alloc = cldev.max_mem_alloc_size
        self.global_mem = cldev.global_mem_size
        self.memory_limit = memory_limit_from_env(self.global_mem)  # bytes the pool may hold on the device
        # elementwise local size: fixed per device (PoCL compiles each kernel again per local size)
        self.ls = min(self.max_wg, 64 if self.is_cpu else 256)
        self.vector_width_float = usable_vector_width(cldev)  # what the "_v" kernels and matmul tiles are sized for
        self._programs: dict = {}
        _ALL_DEVICES.add(self)
        self._kernels: dict = {}
        self._kinfo: dict = {}  # id(kernel) -> (its _kernels key, its program): kernel_info
        self._dev_id = _binary_cache.device_id(cl, cldev)  # what a stored program binary depends on
        self.defines = (" -DCT_FP64" if self.fp64 else "") + (" -DCT_I64ATOM" if self.i64atomics else "")
        self.oom_retries = 0
        self._chk = _Checks()  # the calling thread's device-side check state
        self._uploads: list = []  # host-to-device copies in flight (their events keep the host arrays alive)

    @property
    def check_pending(self) -> bool:
        """Whether a kernel this thread queued may have recorded a failed check since its last host read."""
        return self._chk.pending

    def check_failed(self) -> bool:
        """Whether a check kernel this thread queued since its last host read recorded a failure: one 32-byte
        blocking read where one is pending, after which a pending check that passed is pending no more (a compiled
        step's replay asks at its start, before reads it moved there; it ran eagerly at every call where the step
        before left a check pending, as a PPO step's ``log_prob`` gather after its last read).  A failure stays
        pending for the next host read to report."""
        chk = self._chk
        if not chk.pending:
            return False
        with self.lock:
            flag = np.empty_like(_ERR_CLEAR)
            cl.enqueue_copy(self.queue, flag, chk.buffer(), is_blocking=True)
        if int(flag.view(np.int32)[2]):
            return True
        chk.pending = False  # every launch so far passed (as discard_checks finds): the next read need not look
        return False

    @property
    def _codes(self) -> dict:
        return self._chk.codes

    # ---- memory -----------------------------------------------------------------------------
    def memory_allocated(self) -> int:
        """Bytes of device memory held by live arrays (torch.cuda.memory_allocated's figure)."""
        return self.pool.active_bytes

    def memory_reserved(self) -> int:
        """Bytes of device memory the pool holds, live arrays and cached free blocks (memory_reserved)."""
        return self.pool.managed_bytes

    def _over_limit(self, nbytes: int) -> None:
        """Called when the pool may need ``nbytes`` more than the limit allows: its cached free blocks are returned
        to the driver, and the clear out-of-memory error is raised if the live arrays alone leave no room."""
        pool = self.pool
        size = pool.alloc_size(pool.bin_number(nbytes)) if nbytes else 0  # the pool's rounded block size
        pool.free_held()  # now the pool holds only live arrays' blocks
        if pool.managed_bytes + size > self.memory_limit:
            raise OutOfMemoryError(
                f"OpenCL out of memory on '{self.name}'. Tried to allocate {_mib(nbytes)}; coretorch holds "
                f"{_mib(pool.active_bytes)} in live tensors on this device of a limit of {_mib(self.memory_limit)} "
                f"(device global memory {_mib(self.global_mem)}; CORETORCH_OPENCL_MEMORY_LIMIT lowers the limit). "
                "Free tensors (del, smaller batches) and retry.")

    def alloc(self, nbytes: int):
        pool = self.pool
        if pool.managed_bytes + nbytes > self.memory_limit:  # near the limit only: two counters otherwise
            self._over_limit(nbytes)
        try:
            return self._pool_alloc(nbytes)
        except Exception as first:  # noqa: BLE001 - any driver failure: empty the pool once and retry
            if cl is not None and not isinstance(first, (cl.Error, MemoryError)):
                raise
            self.pool.free_held()
            self.oom_retries += 1
            try:
                return self._pool_alloc(nbytes)
            except Exception as e:  # noqa: BLE001
                raise OutOfMemoryError(
                    f"OpenCL out of memory on '{self.name}': could not allocate {nbytes} bytes "
                    f"(device memory {self.global_mem >> 20} MiB, largest single allocation "
                    f"{self.max_alloc >> 20} MiB; the buffer pool was emptied and the allocation retried): "
                    f"{e}") from None

    def array(self, shape, dtype, data=None, offset: int = 0, strides=None):
        if not isinstance(dtype, np.dtype):  # already a numpy dtype on the kernels' path
            dtype = np.dtype(dtype)
        if shape.__class__ is not tuple:
            shape = tuple(shape)
        contiguous = strides is None
        if contiguous:
            lay = _LAYOUTS.get((shape, dtype.itemsize))
            if lay is None:
                size = 1
                for s in shape:
                    size *= s
                lay = _LAYOUTS[(shape, dtype.itemsize)] = (size, c_strides(shape, dtype.itemsize))
                if len(_LAYOUTS) > 4096:  # a bounded memo of (shape, itemsize) -> (size, C strides)
                    _LAYOUTS.clear()
            size, strides = lay
        else:
            size = 1
            for s in shape:
                size *= s
        if data is None and size:
            data = self.alloc(size * dtype.itemsize)
        a = cla.Array(None, shape, dtype, data=data, offset=offset, strides=strides, _fast=True, _size=size,
                      _context=self.ctx, _queue=self.queue)
        if contiguous:
            # C-contiguous by construction: elementwise kernels skip their stride analysis (an attribute of ours,
            # not pyopencl's, so set in the instance dict where common._contiguous_args reads it)
            a.__dict__["_ct_c"] = True
        return a

    # ---- device-side checks --------------------------------------------------------------------
    def error_buffer(self) -> cl.Buffer:
        """The buffer kernels record a failed check in: long[4], kept until a host read reports it.

        * bytes 8-11, the claim (an int): written once, by the first failing kernel, with an atomic_cmpxchg from 0:
          nll_loss writes 1 (its check code in ``CHECKS``) and then the failing target in long 0; an index check
          writes its launch ticket (``check_ticket``), so that only that launch's work-items record more;
        * bytes 12-15: the index check's message code (``check_code``);
        * long 2 / long 3: the largest value above / the smallest value below the index check's range (an atomic
          max / min, as 64-bit atom_cmpxchg loops): the report names the first as the CPU check does, else the
          second.

        Asking for it marks a check pending: the next host read reads the buffer in the same synchronisation (see
        ``read``)."""
        chk = self._chk
        if chk.err is None:
            chk.err = cl.Buffer(self.ctx, cl.mem_flags.READ_WRITE, _ERR_CLEAR.nbytes)
            cl.enqueue_fill_buffer(self.queue, chk.err, _ERR_CLEAR, 0, _ERR_CLEAR.nbytes)
        chk.pending = True
        return chk.err

    def check_code(self, exc, template: str) -> int:
        """The code an index check's kernel writes for ``exc(template.format(value))`` (one per message between
        two host reads: a loop's checks add nothing after its first step)."""
        key = (exc, template)
        chk = self._chk
        code = chk.codes.get(key)
        if code is None:
            code = chk.codes[key] = len(chk.codes) + 1
            chk.messages[code] = key
        return code

    def check_ticket(self) -> int:
        """A claim value no other launch since the last host read uses (1 is nll_loss's)."""
        chk = self._chk
        chk.ticket = chk.ticket + 1 if chk.ticket < 2 ** 31 - 1 else 2
        return chk.ticket

    def check_mark(self) -> tuple:
        """Where this thread's check tickets stand now: the launches after it are those ``discard_checks(mark)``
        forgets."""
        chk = self._chk
        return chk.reports, chk.ticket

    def discard_checks(self, mark: tuple) -> None:
        """Forget a failure recorded by a check launched after ``mark``: its op raised on the host before using its
        result, and the failure must not surface at a later, unrelated host read.  A failure of an earlier launch
        stays pending.  Costs one 32-byte blocking read, and only when a check is pending (an error path)."""
        reports, ticket = mark
        chk = self._chk
        if not chk.pending or (reports == chk.reports and ticket == chk.ticket):
            return  # nothing launched since the mark
        with self.lock:
            flag = np.empty_like(_ERR_CLEAR)
            cl.enqueue_copy(self.queue, flag, chk.buffer(), is_blocking=True)
            claim = int(flag.view(np.int32)[2])
            if claim == 0:
                chk.pending = False  # every launch so far passed: the next read need not look
                return
            if claim == 1 or (reports == chk.reports and claim <= ticket):
                return  # nll_loss's claim, or a check launched before the mark failed: reported at the next read
            cl.enqueue_fill_buffer(self.queue, chk.buffer(), _ERR_CLEAR, 0, _ERR_CLEAR.nbytes)
            chk.pending = False  # the claim was ours: the launches before it passed

    def upload(self, buf, host) -> None:
        """Non-blocking host-to-device copy of ``host`` into ``buf``.  pyopencl's event for it waits for the copy
        when it is deleted (it holds ``host``): dropped at once, it drained the whole queue (a from_numpy in a
        step waited for every kernel before it, 50 ms behind a 1024^3 product); kept here until it completed."""
        ev = cl.enqueue_copy(self.queue, buf, host, is_blocking=False)
        with self.lock:
            ups = self._uploads
            if ups:
                done = cl.command_execution_status.COMPLETE
                ups[:] = [e for e in ups if e.command_execution_status != done]
                if len(ups) >= 256:  # a bound on the host copies held: wait for the oldest
                    ups.pop(0).wait()
            ups.append(ev)

    def read(self, host, buf, byte_offset: int = 0) -> None:
        """Blocking device-to-host copy of ``buf`` into ``host``, raising a failed device-side check.

        With a check pending, the 32-byte check buffer is copied first without blocking: the in-order queue
        finishes it before the data copy returns, so the check costs no extra round trip."""
        ev = flag = None
        chk = self._chk
        if chk.pending:
            flag = np.empty_like(_ERR_CLEAR)
            ev = cl.enqueue_copy(self.queue, flag, chk.buffer(), is_blocking=False)
        STATS["to_host"] += 1
        cl.enqueue_copy(self.queue, host, buf, src_offset=byte_offset, is_blocking=True)
        if self._uploads:  # the in-order queue ran every earlier copy
            with self.lock:
                self._uploads.clear()
        if ev is not None:
            ev.wait()  # already complete (in-order queue): no round trip
            self._report(flag)

    def synchronize(self) -> None:
        """Wait for every queued kernel and raise a failed device-side check now (one 32-byte read, if pending)."""
        with self.lock:
            chk = self._chk
            if chk.pending:
                flag = np.empty_like(_ERR_CLEAR)
                cl.enqueue_copy(self.queue, flag, chk.buffer(), is_blocking=True)
                self._report(flag)
            self.queue.finish()
            self._uploads.clear()

    def _report(self, flag) -> None:
        """Raise the failure recorded in ``flag`` (the check buffer as read), if any, and start afresh: every
        kernel queued before the read has run, so no launch still refers to a message code or a ticket."""
        chk = self._chk
        chk.pending = False
        chk.reports += 1
        ints = flag.view(np.int32)
        claim, code = int(ints[2]), int(ints[3])
        messages = chk.messages
        chk.codes, chk.messages, chk.ticket = {}, {}, 1
        if claim:
            # cleared: the device stays usable
            cl.enqueue_fill_buffer(self.queue, chk.buffer(), _ERR_CLEAR, 0, _ERR_CLEAR.nbytes)
            if claim == 1:
                exc, msg = CHECKS[1]
                value = int(flag[0])
            else:
                exc, msg = messages[code]
                value = int(flag[2]) if flag[2] != _LMIN else int(flag[3])
            raise exc(msg.format(value))

    # ---- programs ---------------------------------------------------------------------------
    def kernel(self, key, kname: str, source_fn, options: str = ""):
        k = self._kernels.get((key, kname))
        if k is not None:
            return k
        prog = self._programs.get(key)
        if prog is None:
            src = HEADER + source_fn()
            opts = self.defines + (" " + options if options else "")

            def from_source():
                try:
                    return cl.Program(self.ctx, src).build(options=opts)
                except cl.Error:   # once more: processes building one program into PoCL's cold cache can collide
                    return cl.Program(self.ctx, src).build(options=opts)
            try:
                prog = _binary_cache.build(cl, self.ctx, self.cldev, self._dev_id, src, opts, from_source)
            except cl.Error as e:
                raise RuntimeError(f"coretorch-opencl: building a kernel failed on '{self.name}': {e}\n{src}") \
                    from None
            STATS["builds"] += 1
            prog._ct_source = src
            self._programs[key] = prog
        k = cl.Kernel(prog, kname)
        k.set_scalar_arg_dtypes(_arg_dtypes(prog._ct_source, kname))
        self._kernels[(key, kname)] = k
        self._kinfo[id(k)] = (key, kname, prog)
        STATS["kernels"] = STATS.get("kernels", 0) + 1
        return k

    def kernel_info(self, k) -> tuple | None:
        """(program, kernel name, scalar argument dtypes) of a kernel this device built, else None (a lowered
        replay makes its own kernel objects of the same program: see lowering.py)."""
        entry = self._kinfo.get(id(k))
        if entry is None or self._kernels.get(entry[:2]) is not k:
            return None
        key, kname, prog = entry
        return prog, kname, _arg_dtypes(prog._ct_source, kname)

    def launch(self, k, n: int, args):
        ls = self.ls
        gs = (n + ls - 1) // ls * ls
        STATS["launches"] += 1
        k(self.queue, (gs,), (ls,), *args)


# LLVM CPU names whose float registers are 512 bits wide (AVX-512); "icelake" covers -client and -server
_AVX512_CPUS = ("skylake-avx512", "cascadelake", "cooperlake", "cannonlake", "icelake", "tigerlake", "rocketlake",
                "sapphirerapids", "graniterapids", "emeraldrapids", "znver4", "znver5", "knl", "knm", "x86-64-v4")


def usable_vector_width(cldev) -> int:
    """The device's preferred float vector width, but at most 8 where PoCL compiles for an x86 CPU without AVX-512.

    Why: PoCL takes its preferred width from the host's CPU features and its compile target from the CPU's name,
    which its LLVM may not know: on a Zen 4/5 host PoCL 3.0 (LLVM 14) reported width 16 and compiled for
    ``znver3`` (AVX2), where a 16-wide ``sqrt`` aborted the process in LLVM's code generator ("Cannot select
    fsqrt") and other 16-wide kernels went missing from their programs (INVALID_KERNEL_NAME).  The target is
    the last part of PoCL's device string (``HSTR: pthread-x86_64-unknown-linux-gnu-znver3``)."""
    pref = int(cldev.preferred_vector_width_float)
    m = re.search(r"HSTR: \S*x86_64\S*?-gnu-(\S+)", cldev.version or "")
    if pref > 8 and m is not None and not m.group(1).startswith(_AVX512_CPUS):
        return 8
    return pref


def _arg_dtypes(src: str, kname: str) -> list:
    m = re.search(r"__kernel void " + kname + r"\(([^)]*)\)", src)
    if m is None:
        raise RuntimeError(f"coretorch-opencl: no `__kernel void {kname}(...)` in its program's source")
    out: list[type[np.generic] | None] = []
    for a in m.group(1).split(","):
        a = a.strip()
        if "*" in a:
            out.append(None)
        else:
            out.append(_ARG_TYPES[a.split()[0]])
    return out


_LAYOUTS: dict = {}


def c_strides(shape, itemsize: int = 1) -> tuple:
    st = []
    acc = itemsize
    for s in reversed(shape):
        st.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(st))
