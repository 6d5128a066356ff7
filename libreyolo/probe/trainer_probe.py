"""The trainer probe: libreyolo 1.x's own `libreyolo train`, timed from inside, in its own
environment.

A separate program, not a module of this package: `profile run --trainer PY` starts it with
the training environment's interpreter `PY` (`PY trainer_probe.py`), where `import libreyolo`
is the user's libreyolo 1.x and this package cannot be imported (both are the distribution
`libreyolo`). It imports only the standard library, then that environment's torch and
libreyolo, and edits nothing of theirs: it runs 1.x's own CLI entry point with the `key=value`
words `libreyolo train` would get, and times the steps through the hook object 1.x's trainer
already calls every step (`BaseTrainer._profiler`: `wrap_loader`, `phase(name)` around
to_device, forward (with the loss), backward and optimizer, `step()` at the end of a step,
`finished`), with the EMA update timed as part of `optimizer`. `profile_then_stop` (1.x's
own switch) ends training when the window is done, before any validation or checkpoint.

Protocol (version `PROTOCOL`), driven by `libreyolo/measure/trainer_probe.py`:
- stdin, line 1: the request: {"protocol", "fd", "argv", "out_dir", "trace_path"}; `fd` is a
  pipe this program writes its events to, one JSON object per line.
- event `hello`: versions, as soon as torch and libreyolo imported; or `refused` naming the
  hook points this libreyolo lacks (then exit).
- event `ready` when the trainer's first epoch asks for its loader: what 1.x built (batch,
  image size, device, batches per epoch, workers, AMP...). The probe then reads line 2 of
  stdin: the window plan {"warmup", "measured", "unsynced", "bare"}, or {"abort": reason}.
- event `iteration` {"i"} as each iteration of the plan ends (warmup included); the next
  iteration starts once the driver answers with a line on stdin (it samples the host in
  between, so its readings bracket each step exactly; the wait is outside every timing).
- `probe.json` (written whole, then renamed) in `out_dir` and the Chrome trace at
  `trace_path`, then event `done`; or event `failed` {"stage", "error", "exit_code"} when
  1.x ended before the window.
Everything 1.x prints goes to this process's stdout and stderr, which the driver keeps in a
log. Timing follows the driver's window: warmup, unsynced iterations under torch.profiler (one
device sync at each one's end), bare ones without it (overhead calibration), synced ones with
a sync around each phase (composition).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import sys
import time
import traceback

PROTOCOL = 1
RESULT_NAME = "probe.json"
PR_SET_PDEATHSIG = 1
SIGKILL = 9
# (module, class or None, attributes): what the probe calls or replaces in libreyolo 1.x.
HOOKS = (
    ("libreyolo.cli", None, ("entrypoint",)),
    ("libreyolo.training.trainer", "BaseTrainer", ("setup", "train", "_prof_phase")),
    ("libreyolo.training.config", "TrainConfig", ("profile_then_stop",)),
)


class ParentGone(BaseException):
    """The driver closed its end: stop at once (BaseException: 1.x's handlers must not eat it)."""


class Channel:
    """The event pipe to the driver."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def send(self, event: str, **fields: object) -> None:
        fields["event"] = event
        data = (json.dumps(fields) + "\n").encode("utf-8")
        try:
            while data:
                data = data[os.write(self.fd, data) :]
        except OSError as err:  # EPIPE: the driver is gone
            raise ParentGone from err


def die_with_parent() -> None:
    """Linux: the kernel kills this process when the driver dies (no orphaned training)."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0)


def read_line() -> dict:
    line = sys.stdin.readline()
    if not line:
        raise ParentGone
    return json.loads(line)


def missing_hooks() -> list[str]:
    """The hook points of HOOKS this libreyolo lacks, spelt module:Class.attribute."""
    missing = []
    for module_name, class_name, attributes in HOOKS:
        try:
            owner: object = importlib.import_module(module_name)
        except Exception:
            missing.append(module_name)
            continue
        if class_name is not None:
            owner = getattr(owner, class_name, None)
            if owner is None:
                missing.append(f"{module_name}:{class_name}")
                continue
        fields = getattr(owner, "__dataclass_fields__", {})
        for attribute in attributes:
            if not hasattr(owner, attribute) and attribute not in fields:
                where = f"{module_name}:{class_name}" if class_name else module_name
                missing.append(f"{where}.{attribute}")
    return missing


def versions(torch: object) -> dict:
    import platform

    libreyolo = importlib.import_module("libreyolo")
    cuda = getattr(getattr(torch, "version", None), "cuda", None)
    return {
        "python": sys.executable,
        "python_version": platform.python_version(),
        "platform": platform.platform(),
        "libreyolo": str(getattr(libreyolo, "__version__", "unknown")),
        "libreyolo_path": os.path.dirname(str(getattr(libreyolo, "__file__", ""))),
        "torch": str(getattr(torch, "__version__", "unknown")),
        "cuda": cuda,
    }


def profiler_options(torch_c_profiler: object, cuda: bool) -> object:
    """torch.profiler's experimental config with those options this torch knows: only trace
    (the trace is all that is kept) and, without a GPU, no external correlation."""
    config = torch_c_profiler._ExperimentalConfig  # type: ignore[attr-defined]
    wanted = {"trace_only": True, "disable_external_correlation": not cuda}
    supported = config.__init__.__doc__ or ""
    return config(**{name: on for name, on in wanted.items() if f"{name}:" in supported})


def ms(seconds: float) -> float:
    return round(seconds * 1000.0, 4)


class HookWindow:
    """The hook object 1.x's trainer calls every step (its `_profiler`), running the plan."""

    def __init__(self, trainer: object, channel: Channel, request: dict, torch: object) -> None:
        self.trainer = trainer
        self.channel = channel
        self.out_dir = request["out_dir"]
        self.trace_path = request["trace_path"]
        self.torch = torch
        self.finished = False
        self.started = False
        self.plan: dict = {}
        self.iteration = 0
        self.released = 0  # the last iteration the driver let start
        self.synced = False
        self.seconds: dict[str, float] = {}
        self.start = 0.0
        self.input_at = 0.0
        self.samples: list[dict] = []
        self.bare_ms: list[float] = []
        self.skipped: list[int] = []
        self.epoch_starts: list[int] = []
        self.batch_sizes: dict[int, int | None] = {}
        self.scale_before: float | None = None
        self.memory_before: dict = {}
        self.memory_after: dict = {}
        self.prof: object = None
        self.device = getattr(trainer, "device", None)
        self.device_type = getattr(self.device, "type", "cpu")

    # -- what 1.x's loop calls ------------------------------------------------------------
    def wrap_loader(self, iterable: object):
        if not self.started:
            self._start(iterable)
        it = None
        first = True
        while not self.finished:
            self._begin()
            with self.phase("dataload"):
                try:
                    if it is None:  # inside the timed next(): a loader restart is dataload
                        it = iter(iterable)  # type: ignore[call-overload]
                    batch = next(it)
                except StopIteration:
                    return
            self.input_at = time.perf_counter()
            if first:
                self.epoch_starts.append(self.iteration)
                first = False
            self.batch_sizes[self.iteration] = batch_size(batch)
            yield batch
        if it is not None:  # 1.x kept training past the window: out of its way
            yield from it

    def phase(self, name: str) -> contextlib.AbstractContextManager:
        return self._phase(name)

    @contextlib.contextmanager
    def _phase(self, name: str):
        with self.torch.profiler.record_function("step/" + name):  # type: ignore[attr-defined]
            if not self.synced or self.finished:
                yield
                return
            self._sync()
            start = time.perf_counter()
            try:
                yield
            finally:
                self._sync()
                self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - start

    def step(self) -> None:
        if self.finished:
            return
        i, plan = self.iteration, self.plan
        if not self.synced:
            self._sync()  # the wall covers all the work the step queued
        end = time.perf_counter()
        skipped = self._scale_dropped()
        traced_end = plan["warmup"] + plan["unsynced"]
        bare_end = traced_end + plan["bare"]
        if i >= plan["warmup"]:
            if traced_end <= i < bare_end:
                self.bare_ms.append(ms(end - self.start))
            else:
                self._sample(i, end, skipped)
        if i == plan["warmup"] + plan["measured"] + plan["bare"] - 1:
            self.memory_after = self._memory_stats()
        if self.prof is not None and i < traced_end:
            self.prof.step()  # type: ignore[attr-defined]
            if i == traced_end - 1:
                self.prof.stop()  # type: ignore[attr-defined]
        self.channel.send("iteration", i=i)
        self.iteration += 1
        if self.iteration == plan["warmup"] + plan["measured"] + plan["bare"]:
            self._finish()

    # -- the plan ------------------------------------------------------------------------
    def _start(self, iterable: object) -> None:
        """The first epoch asks for its loader: say what 1.x built, take the plan, start the
        profiler (its warmup spans the warmup iterations, as the driver's own window)."""
        self.started = True
        trainer, torch = self.trainer, self.torch
        config = getattr(trainer, "config", None)
        loader = getattr(trainer, "train_loader", None)
        ema = getattr(trainer, "ema_model", None)
        if ema is not None and callable(getattr(ema, "update", None)):
            ema.update = self._timed_ema(ema.update)
        dataset = getattr(loader, "dataset", None)
        self.channel.send(
            "ready",
            batch=getattr(config, "batch", None),
            imgsz=list(_hw(trainer)),
            device=str(self.device),
            batches_per_epoch=_len(iterable) or _len(loader),
            num_images=_len(dataset),
            num_workers=getattr(loader, "num_workers", None),
            accumulate=int(getattr(trainer, "_accum_steps", 1) or 1),
            amp=getattr(trainer, "scaler", None) is not None,
            model=_call(trainer, "get_model_tag"),
            family=_call(trainer, "get_model_family"),
            data=str(getattr(config, "data", "") or ""),
            epochs=getattr(config, "epochs", None),
            intra_op_threads=torch.get_num_threads(),  # type: ignore[attr-defined]
            device_name=_device_name(torch, self.device),
            device_memory_bytes=_device_memory(torch, self.device),
            num_cpus=os.cpu_count(),
        )
        plan = read_line()
        if "abort" in plan:
            raise ParentGone
        self.plan = plan
        if plan.get("traced", True):
            self._start_profiler()

    def _start_profiler(self) -> None:
        import warnings

        torch = self.torch
        tp = torch.profiler  # type: ignore[attr-defined]
        activities = [tp.ProfilerActivity.CPU]
        cuda = self.device_type == "cuda"
        if cuda:
            activities.append(tp.ProfilerActivity.CUDA)
        kwargs = {}
        with contextlib.suppress(Exception):
            kwargs["experimental_config"] = profiler_options(
                importlib.import_module("torch._C._profiler"), cuda
            )
        schedule = tp.schedule(
            wait=0, warmup=self.plan["warmup"], active=self.plan["unsynced"], repeat=1
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # warmup=0 is a choice here
            self.prof = tp.profile(activities=activities, schedule=schedule, **kwargs)
            self.prof.start()  # type: ignore[attr-defined]

    def _begin(self) -> None:
        i, plan = self.iteration, self.plan
        if 0 < i != self.released:  # the driver has sampled the host: go on
            if "abort" in read_line():
                raise ParentGone
            self.released = i  # an epoch's end retries this iteration: one go is enough
        traced_end = plan["warmup"] + plan["unsynced"]
        self.synced = i >= traced_end + plan["bare"]
        self.seconds = {}
        if i == plan["warmup"]:
            self.memory_before = self._memory_stats(reset=True)
        self.scale_before = self._scale()
        self.start = time.perf_counter()

    def _sample(self, i: int, end: float, skipped: bool) -> None:
        plan = self.plan
        index = i - plan["warmup"]
        if self.synced:
            index -= plan["bare"]
            walls = {name: ms(sec) for name, sec in self.seconds.items()}
            sample = {"wall_ms": round(sum(walls.values()), 4), "phase_ms": walls}
        else:
            sample = {
                "wall_ms": ms(end - self.start),
                "dataload_ms": ms(self.input_at - self.start),
            }
        sample.update(index=index, iteration=i, synced=self.synced, images=self.batch_sizes.get(i))
        self.samples.append(sample)
        if skipped:
            self.skipped.append(index)

    def _finish(self) -> None:
        self.finished = True
        trace, trace_error = None, None
        if self.prof is not None:
            try:
                self.prof.export_chrome_trace(self.trace_path)  # type: ignore[attr-defined]
                trace = os.path.basename(self.trace_path)
            except Exception as err:  # the driver notes it; the samples still hold
                trace_error = f"{type(err).__name__}: {err}"
        result = {
            "protocol": PROTOCOL,
            "samples": self.samples,
            "bare_ms": self.bare_ms,
            "amp_skipped_steps": self.skipped,
            "epoch_starts": self.epoch_starts,
            "memory_before": self.memory_before,
            "memory_after": self.memory_after,
            "trace": trace,
            "trace_error": trace_error,
        }
        write_json(os.path.join(self.out_dir, RESULT_NAME), result)
        self.channel.send("done")

    # -- device --------------------------------------------------------------------------
    def _sync(self) -> None:
        torch = self.torch
        if self.device_type == "cuda":
            torch.cuda.synchronize(self.device)  # type: ignore[attr-defined]
        elif self.device_type == "mps":
            torch.mps.synchronize()  # type: ignore[attr-defined]

    def _memory_stats(self, *, reset: bool = False) -> dict:
        if self.device_type != "cuda":
            return {}
        cuda = self.torch.cuda  # type: ignore[attr-defined]
        if reset:
            cuda.reset_peak_memory_stats(self.device)
        return {k: int(v) for k, v in cuda.memory_stats(self.device).items()}

    def _scale(self) -> float | None:
        scaler = getattr(self.trainer, "scaler", None)
        if scaler is None or not getattr(scaler, "is_enabled", lambda: False)():
            return None
        return float(scaler.get_scale())

    def _scale_dropped(self) -> bool:
        """GradScaler lowered its scale: this step's update was skipped (inf/NaN grads)."""
        before = self.scale_before
        after = self._scale()
        return before is not None and after is not None and after < before

    def _timed_ema(self, update):
        def timed(*args: object, **kwargs: object) -> object:
            with self.phase("optimizer"):
                return update(*args, **kwargs)

        return timed


def batch_size(batch: object) -> int | None:
    images = batch[0] if isinstance(batch, (list, tuple)) and batch else None
    shape = getattr(images, "shape", None)
    return int(shape[0]) if shape else None


def _len(thing: object) -> int | None:
    try:
        return len(thing)  # type: ignore[arg-type]
    except Exception:
        return None


def _call(owner: object, name: str) -> str | None:
    with contextlib.suppress(Exception):
        return str(getattr(owner, name)())
    return None


def _hw(trainer: object) -> tuple:
    with contextlib.suppress(Exception):
        return tuple(int(v) for v in trainer.input_size)  # type: ignore[attr-defined]
    return ()


def _device_name(torch: object, device: object) -> str | None:
    if getattr(device, "type", None) != "cuda":
        import platform

        return platform.processor() or None
    with contextlib.suppress(Exception):
        return str(torch.cuda.get_device_name(device))  # type: ignore[attr-defined]
    return None


def _device_memory(torch: object, device: object) -> int | None:
    if getattr(device, "type", None) != "cuda":
        return None
    with contextlib.suppress(Exception):
        return int(torch.cuda.get_device_properties(device).total_memory)  # type: ignore[attr-defined]
    return None


def write_json(path: str, value: object) -> None:
    """`value` written whole to `path` (a temporary file renamed over it)."""
    partial = path + ".partial"
    with open(partial, "w", encoding="utf-8") as handle:
        json.dump(value, handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(partial, path)


def install(channel: Channel, request: dict, torch: object) -> dict:
    """Make 1.x's trainer report to a HookWindow once set up, and stop after it; returns the
    state that says whether the window ran."""
    trainer_module = importlib.import_module("libreyolo.training.trainer")
    base = trainer_module.BaseTrainer
    original = base.setup
    state: dict = {"window": None}

    def setup(self: object, *args: object, **kwargs: object) -> object:
        result = original(self, *args, **kwargs)
        if getattr(self, "is_distributed", False):
            raise RuntimeError("the trainer probe measures one process; this run is distributed")
        window = HookWindow(self, channel, request, torch)
        self._profiler = window  # type: ignore[attr-defined]
        self.config.profile_then_stop = True  # type: ignore[attr-defined]
        state["window"] = window
        return result

    base.setup = setup
    return state


def main() -> int:
    request = read_line()
    channel = Channel(int(request["fd"]))
    die_with_parent()
    if request.get("protocol") != PROTOCOL:
        channel.send("refused", missing=[], reason=f"protocol {request.get('protocol')}")
        return 3
    stage = "import"
    try:
        import torch

        info = versions(torch)
        channel.send("hello", **info)  # the driver refuses a libreyolo that is not 1.x here
        missing = missing_hooks()
        if missing:
            channel.send("refused", missing=missing, **info)
            return 3
        stage = "train"
        state = install(channel, request, torch)
        sys.argv = ["libreyolo", "train", *request["argv"]]
        exit_code = 0
        try:
            importlib.import_module("libreyolo.cli").entrypoint()
        except SystemExit as done:
            code = done.code
            exit_code = code if isinstance(code, int) else (0 if code is None else 1)
        window = state["window"]
        if window is not None and window.finished:
            return 0
        reason = "libreyolo train ended before the window was done"
        if window is None:
            reason = "libreyolo train ended before its trainer was set up"
        elif window.started:
            reason = f"libreyolo train ended after {window.iteration} of the window's iterations"
        channel.send("failed", stage=stage, error=reason, exit_code=exit_code)
        return 1
    except ParentGone:
        return 1
    except BaseException as err:
        traceback.print_exc()
        with contextlib.suppress(ParentGone):
            channel.send("failed", stage=stage, error=f"{type(err).__name__}: {err}", exit_code=1)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
