"""Every default of `libreyolo profile run|infer`, once: the config schema's field defaults and
the POSIX flags' defaults (and so their `--help` texts) are these names.

A module of constants below every layer, so that both the typed config (`config/schema.py`)
and the argparse tree (`cli/parser.py`) read it: the parser is imported by every reader, and
importing the config package would cost a reader's start the YAML and Compose-API modules.
The packaged `conf/mode/*.yaml` files repeat the per-mode values as plain YAML, for people who
read or copy them; tests/config/test_mode_defaults.py proves they compose to exactly these.

Must not: import anything (not even the rest of libreyolo), read the environment, or compute.
"""

from __future__ import annotations

# The model: a registry family, its weights file or name, and the inference fusion mode.
FAMILY = "yolo9"
WEIGHTS = "LibreYOLO9t.pt"
FUSE = "full"  # full (BN folded, RepConvN merged, channels-last), bn (BN folded only), none
FUSE_MODES = ("full", "bn", "none")

# Training data: a registry name or a dataset YAML path, its loader workers and RAM cache.
DATASET = "synthetic"
WORKERS = 8
CACHE = False

DEVICE = "0"  # the first visible CUDA device
PROJECT = "runs/profile"  # output root: `<project>/run/`, `<project>/infer/`
THREADS: int | None = None  # torch's intra-op CPU threads (None: torch's own default)
REPEAT = 1

# `profile run --trainer PY`: libreyolo 1.x's own trainer, in the environment of interpreter PY.
TRAINER: str | None = None  # None: this package's own training step
TRAINER_TIMEOUT_S = 900.0  # the longest the trainer may stay silent (setup, one step)

# `profile run`: a training step. The schema's own root and window fields carry these.
RUN_BATCH = 16
RUN_IMGSZ = 640
RUN_WARMUP = 5
RUN_STEPS = 20
AMP = True
# The built-in step does 1.6.0's work per iteration; each of this package's speed-ups is a named
# variant a run opts into (`--variant`), measured as a lever on a faithful run.
MAX_LABELS: int | None = None  # rows per image of YOLOv9 targets; None: 1.6.0's own (300)
CHECKPOINT_CONFIG = True  # a 1.6.0 checkpoint's training config fills the keys left unset
OPTIMIZERS = ("sgd", "adam", "adamw")  # 1.6.0's `optimizer` key
# trimmed_targets: rows only to the batch's largest box count; vectorised_assigner: YOLOv9's loss
# by cheaper arithmetic for the same values; foreach_updates: SGD and the EMA as one
# multi-tensor update each on every device (1.6.0 loops per tensor on the CPU);
# channels_last: weights and inputs NHWC (1.6.0 trains NCHW)
TRAIN_VARIANTS = ("trimmed_targets", "vectorised_assigner", "foreach_updates", "channels_last")

# `profile infer`: an inference call (conf/mode/infer.yaml sets batch, imgsz and warmup).
INFER_BATCH = 1
INFER_IMGSZ = 0  # the model's own input size (YOLOv9 640; YOLOX 416 for n/t, 640 for s+)
INFER_WARMUP = 20
INFER_RUNS = 100
HALF = False
AMP_DTYPE = "float16"
AMP_DTYPES = ("float16", "bfloat16")
CONF = 0.25
IOU = 0.45
MAX_DET = 300
TRACE = True
INCLUDE_DECODE = False  # decode the image files inside the window, not once before it

# How the model runs (`--exec`, the config group `exec`): eager PyTorch, torch.compile, a CUDA
# graph of the forward (inference, CUDA), or an ONNX export run by ONNX Runtime (inference).
EXEC = "eager"
EXEC_MODES = ("eager", "compile", "cudagraphs", "onnxruntime")
TRAIN_EXEC_MODES = ("eager", "compile")  # a training step has no export or direct graph path
COMPILE_MODE = "default"
COMPILE_MODES = ("default", "reduce-overhead", "max-autotune")
COMPILE_BACKEND = "inductor"  # torch.compile's backend (aot_eager, eager: debugging, tests)
CHANNELS_LAST: bool | None = None  # None: the path's own (--fuse full: NHWC; training: NCHW)
ONNX_OPSET = 17
# Agreement with eager fp32 (recall and precision of the detections) below which no execution
# mode or precision is called faster (`compare --min-agreement`, the execution verdict).
MIN_AGREEMENT = 0.99
