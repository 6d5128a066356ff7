"""One process boundary: only `libreyolo/boundary/output.py` writes to stdout or stderr, only
`libreyolo/boundary/status.py` ends the process, and every entry point maps what it raised
through `exit_status`. The scan reads the syntax tree, so a comment or a string that says
`print(` is not a call, and an alias (`from sys import exit`) is one."""

from __future__ import annotations

import ast
import io
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from libreyolo.boundary.output import Output
from libreyolo.boundary.status import exit_process, exit_status
from libreyolo.errors import ExitStatus, NoProfileError, Terminated, UsageError

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "libreyolo"
WRITER = "libreyolo/boundary/output.py"  # the only module that writes to the standard streams
EXIT = "libreyolo/boundary/status.py"  # the only module that sets the process status
STREAMS = {"stdout", "stderr", "__stdout__", "__stderr__"}
# A forked child ends itself with os._exit (Python's teardown would run the parent's exit hooks
# and flush its buffers a second time): allowed in these functions of these modules only (the
# half-reader's child; a pool worker whose reader died, from its signal handler).
CHILD_EXIT = ("libreyolo/kineto/halves.py", "_child")
CHILD_EXITS = {CHILD_EXIT, ("libreyolo/kineto/workers.py", "leave")}
CHILD_EXITS |= {("libreyolo/kineto/workers.py", "_bind_to_reader")}
# Programs another interpreter runs (the trainer probe, in libreyolo 1.x's environment): their
# process is not ours, so they end it themselves; no module of the package imports them.
SEPARATE_PROGRAMS = "libreyolo/probe/"
# A use of a standard stream that writes nothing: flushing what Python holds, asking whether
# it is a terminal, or whether there is one at all (`sys.stderr is None` under pythonw).
HARMLESS = {"flush", "isatty"}


def _parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def _is(node: ast.AST, module: str, names: set[str]) -> bool:
    """`node` is `module.<one of names>`."""
    return (
        isinstance(node, ast.Attribute)
        and node.attr in names
        and isinstance(node.value, ast.Name)
        and node.value.id == module
    )


def _exits(node: ast.AST) -> str | None:
    if isinstance(node, ast.Call):
        if isinstance(node.func, ast.Name) and node.func.id in {"exit", "quit"}:
            return f"{node.func.id}("
        if _is(node.func, "sys", {"exit"}) or _is(node.func, "os", {"_exit", "abort"}):
            return f"{ast.unparse(node.func)}("
    if isinstance(node, ast.Raise) and node.exc is not None:
        raised = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
        if isinstance(raised, ast.Name) and raised.id == "SystemExit":
            return "raise SystemExit"
    if isinstance(node, ast.ImportFrom) and node.module in {"sys", "os"}:
        names = {alias.name for alias in node.names} & {"exit", "_exit", "abort"}
        if names:
            return f"from {node.module} import {', '.join(sorted(names))}"
    return None


def _writes(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> str | None:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print":
        return "print("
    if _is(node, "sys", STREAMS):
        parent = parents.get(node)
        harmless = isinstance(parent, ast.Compare) or (
            isinstance(parent, ast.Attribute) and parent.attr in HARMLESS
        )
        return None if harmless else ast.unparse(parents.get(node, node))
    if isinstance(node, ast.Call) and _is(node.func, "os", {"write"}) and node.args:
        fd = node.args[0]
        if isinstance(fd, ast.Constant) and fd.value in (1, 2):
            return ast.unparse(node)
    if isinstance(node, ast.ImportFrom) and node.module == "sys":
        names = {alias.name for alias in node.names} & STREAMS
        if names:
            return f"from sys import {', '.join(sorted(names))}"
    return None


def _ends_a_child(node: ast.AST, parents: dict[ast.AST, ast.AST], name: str) -> bool:
    """`node` is a forked child's `os._exit` in one of CHILD_EXITS' functions."""
    if _called(node) != "os._exit":
        return False
    parent = parents.get(node)
    while parent is not None and not isinstance(parent, ast.FunctionDef):
        parent = parents.get(parent)
    return isinstance(parent, ast.FunctionDef) and (name, parent.name) in CHILD_EXITS


def _called(node: ast.AST) -> str | None:
    if isinstance(node, ast.Call) and _is(node.func, "os", {"_exit"}):
        return "os._exit"
    return None


def violations(source: str, name: str) -> list[str]:
    """`name:line: what` for each write to a standard stream and each exit in `source` that
    its module may not make."""
    tree = ast.parse(source)
    parents = _parents(tree)
    found = []
    for node in ast.walk(tree):
        kinds = (
            _writes(node, parents) if name != WRITER else None,
            _exits(node) if name != EXIT and not _ends_a_child(node, parents, name) else None,
        )
        found += [f"{name}:{getattr(node, 'lineno', 0)}: {what}" for what in kinds if what]
    return sorted(found)


def test_only_the_boundary_prints_or_exits() -> None:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(ROOT).as_posix()
        if not name.startswith(SEPARATE_PROGRAMS):
            found += violations(path.read_text(encoding="utf-8"), name)
    assert found == []
    assert (ROOT / WRITER).is_file() and (ROOT / EXIT).is_file()  # the allow-list is real


def test_the_separate_programs_are_not_modules_of_the_package() -> None:
    folder = ROOT / SEPARATE_PROGRAMS
    assert sorted(p.name for p in folder.glob("*.py")) == ["trainer_probe.py"]
    assert not (folder / "__init__.py").exists()  # never `import libreyolo.probe...`
    importers = [
        path.relative_to(ROOT).as_posix()
        for path in PACKAGE.rglob("*.py")
        if not path.relative_to(ROOT).as_posix().startswith(SEPARATE_PROGRAMS)
        and re.search(
            r"^\s*(from|import)\s+(libreyolo\.probe\b|libreyolo\s+import\s+probe\b)",
            path.read_text("utf-8"),
            re.M,
        )
    ]
    assert importers == []


def test_only_the_forked_child_of_halves_may_end_itself() -> None:
    child = "def _child():\n    os._exit(0)\n"
    other = "def _read():\n    os._exit(0)\n"
    assert violations(child, CHILD_EXIT[0]) == []
    assert violations(other, CHILD_EXIT[0]) == [f"{CHILD_EXIT[0]}:2: os._exit("]
    assert violations(child, "libreyolo/kineto/events.py") == [
        "libreyolo/kineto/events.py:2: os._exit("
    ]
    assert violations("def _child():\n    sys.exit(0)\n", CHILD_EXIT[0]) == [
        f"{CHILD_EXIT[0]}:2: sys.exit("
    ]


def test_the_scan_sees_every_way_out_and_no_comment() -> None:
    source = "\n".join(
        [
            "import os, sys",
            "from sys import exit, stderr",
            "# print('a comment'), sys.exit(1)",
            "TEXT = 'print(1); sys.stdout.write(x)'",
            "print('x')",
            "sys.stdout.write('x')",
            "(err or sys.stderr).write('x')",
            "os.write(2, b'x')",
            "sys.exit(3)",
            "raise SystemExit(4)",
            "exit(5)",
            "os._exit(6)",
            "if sys.stderr is not None:",
            "    sys.stderr.flush()",
            "os.write(fd, b'a file')",
        ]
    )
    assert violations(source, "libreyolo/x.py") == [
        "libreyolo/x.py:10: raise SystemExit",
        "libreyolo/x.py:11: exit(",
        "libreyolo/x.py:12: os._exit(",
        "libreyolo/x.py:2: from sys import exit",
        "libreyolo/x.py:2: from sys import stderr",
        "libreyolo/x.py:5: print(",
        "libreyolo/x.py:6: sys.stdout.write",
        "libreyolo/x.py:7: err or sys.stderr",
        "libreyolo/x.py:8: os.write(2, b'x')",
        "libreyolo/x.py:9: sys.exit(",
    ]
    assert violations("print('x')", WRITER) == []  # the allow-list, kind by kind
    assert violations("raise SystemExit(1)", WRITER) == [f"{WRITER}:1: raise SystemExit"]
    assert violations("print('x')", EXIT) == [f"{EXIT}:1: print("]


def _map(body: object, *, debug: bool = False, crash_traceback: bool = False) -> tuple[int, str]:
    err = io.StringIO()

    def run() -> int:
        if isinstance(body, BaseException):
            raise body
        assert isinstance(body, int)
        return body

    status = exit_status(
        run, Output(io.StringIO(), err), debug=debug, crash_traceback=crash_traceback
    )
    assert isinstance(status, ExitStatus)
    return int(status), err.getvalue()


@pytest.mark.parametrize(
    ("body", "status", "line"),
    [
        (4, 4, ""),  # a body's own status (the regression gate)
        (SystemExit(), 0, ""),  # argparse's --help
        (SystemExit(2), 2, ""),  # Hydra's own argparse refusing a flag
        (SystemExit(1), 1, ""),  # Hydra's run_and_report after printing a config error
        (SystemExit(7), 1, ""),  # no such status: failed
        (SystemExit("why"), 1, "why\n"),
        (UsageError("bad --batch", hint="see --help"), 2, "bad --batch (see --help)\n"),
        (NoProfileError("no profile"), 3, "no profile\n"),
        (KeyboardInterrupt(), 130, "interrupted\n"),
        (Terminated(), 143, "terminated\n"),
        (
            ValueError("boom"),
            1,
            "internal error: ValueError: boom (run again with --debug for the traceback)\n",
        ),
    ],
)
def test_exit_status_maps_what_a_body_raised(body: object, status: int, line: str) -> None:
    assert _map(body) == (status, line)


def test_a_crash_shows_its_traceback_where_there_is_no_debug_flag() -> None:
    status, err = _map(ValueError("boom"), crash_traceback=True)
    assert status == 1
    assert err.startswith("Traceback (most recent call last):\n")
    assert err.endswith("ValueError: boom\n")


def test_debug_lets_errors_and_crashes_through() -> None:
    with pytest.raises(UsageError):
        _map(UsageError("bad"), debug=True)
    with pytest.raises(ValueError):
        _map(ValueError("boom"), debug=True)


def test_exit_process_flushes_then_exits_with_the_status() -> None:
    class Counted(io.StringIO):
        flushed = 0

        def flush(self) -> None:
            Counted.flushed += 1

    with pytest.raises(SystemExit) as caught:
        exit_process(ExitStatus.TERMINATED, Output(Counted(), Counted()))
    assert caught.value.code == 143 and type(caught.value.code) is int
    assert Counted.flushed == 2


UNFINALIZED_EXIT = """
import atexit, sys, threading, time
from pathlib import Path
from libreyolo.boundary.output import Output
from libreyolo.boundary.status import exit_process

marks, how = Path(sys.argv[1]), sys.argv[2]


class Finalized:  # a module global: its __del__ runs only in the interpreter's finalization
    def __del__(self) -> None:
        (marks / "finalized").write_text("ran")


held = Finalized()
atexit.register(lambda: (marks / "atexit").write_text("ran"))
if how == "thread":  # a non-daemon thread still at work: Python joins it before it exits
    def late() -> None:
        time.sleep(0.3)
        (marks / "thread").write_text("done")

    threading.Thread(target=late).start()
sys.stdout.write("a result with no newline")  # held in Python's buffer: a pipe is not a tty
exit_process(3, Output(sys.stdout, sys.stderr), finalize=how == "finalize")
"""


@pytest.mark.parametrize(
    ("how", "marks"),
    [
        ("skip", ["atexit"]),  # atexit hooks ran, the interpreter's finalization did not
        ("finalize", ["atexit", "finalized"]),
        ("thread", ["atexit", "finalized", "thread"]),  # the normal exit: the thread finished
    ],
)
def test_an_unfinalized_exit_keeps_the_status_the_output_and_the_atexit_hooks(
    tmp_path: Path, how: str, marks: list[str]
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", UNFINALIZED_EXIT, str(tmp_path), how],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
        timeout=60,
    )
    assert (done.returncode, done.stdout, done.stderr) == (3, "a result with no newline", "")
    assert sorted(path.name for path in tmp_path.iterdir()) == marks


@pytest.mark.parametrize(("torch_loaded", "finalize"), [(True, False), (False, True)])
def test_the_console_script_skips_finalization_only_with_torch_loaded(
    monkeypatch: pytest.MonkeyPatch, torch_loaded: bool, finalize: bool
) -> None:
    from libreyolo.cli import main as cli_main

    seen: list[tuple[int, bool]] = []

    def record_exit(status: int, out: Output, *, finalize: bool = True) -> None:
        seen.append((status, finalize))

    monkeypatch.setattr(cli_main, "main", lambda output: ExitStatus.NO_PROFILE)
    monkeypatch.setattr(cli_main, "exit_process", record_exit)
    monkeypatch.setattr(sys, "argv", ["libreyolo", "profile", "infer"])
    modules = dict(sys.modules)
    modules.pop("torch", None)
    if torch_loaded:
        modules["torch"] = sys.modules["os"]  # present is all the entry point asks
    monkeypatch.setattr(sys, "modules", modules)
    cli_main.run()
    assert seen == [(ExitStatus.NO_PROFILE, finalize)]


def _python_m(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *argv],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("module", "line"),
    [
        (
            "libreyolo.sweep.report",
            "python -m libreyolo.sweep.report takes one sweep folder "
            "(python -m libreyolo.sweep.report <sweep dir>)\n",
        ),
        (
            "libreyolo.sweep.point",
            "python -m libreyolo.sweep.point takes one point.json "
            "(python -m libreyolo.sweep.point <point dir>/point.json)\n",
        ),
    ],
)
def test_python_m_entries_refuse_a_missing_argument_with_one_line(module: str, line: str) -> None:
    done = _python_m(module)
    assert (done.returncode, done.stdout, done.stderr) == (2, "", line)


def test_hydras_own_exit_reaches_the_process_through_the_boundary(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from libreyolo.sweep import app

    def hydra_refuses() -> None:  # what @hydra.main does after printing a bad override
        sys.exit(1)

    monkeypatch.setattr(app, "sweep_task", hydra_refuses)
    monkeypatch.setattr(sys, "argv", ["libreyolo-sweep", "-m", "batch=1"])
    with pytest.raises(SystemExit) as caught:
        app.main()
    assert caught.value.code == 1 and type(caught.value.code) is int
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
