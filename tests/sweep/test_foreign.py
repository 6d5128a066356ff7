"""A sweep replaces only what it wrote: `sweep.json`, `sweep.png`, `sweep_plan.json` and the
point folders' files of someone else stop it with one line (exit 2) and stay as they were."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from libreyolo.config.compose import as_plain_dict
from libreyolo.config.schema import ProfileConfig
from libreyolo.document.convert import to_plain
from libreyolo.errors import UsageError
from libreyolo.sweep.chart import is_our_chart
from libreyolo.sweep.point import run_point
from libreyolo.sweep.report import write_report
from tests.sweep.helpers import tiny_sweep_argv
from tests.sweep.test_report import make_sweep

HINT = "(move it away, or choose another hydra.sweep.dir)"


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("sweep.json", b'{"my": "notes"}'),
        ("sweep.json", b'{"points": {}}'),  # no schema: not a record we wrote
        ("sweep.png", b"\x89PNG\r\n\x1a\n a holiday photo"),
        ("sweep.html", b"<html>my notes</html>"),
        ("sweep_plan.json", b"[1, 2]"),
    ],
)
def test_write_report_refuses_to_replace_a_file_it_did_not_write(
    tmp_path: Path, name: str, content: bytes
) -> None:
    make_sweep(tmp_path)
    (tmp_path / name).write_bytes(content)
    with pytest.raises(UsageError) as caught:
        write_report(tmp_path)
    assert caught.value.message == (
        f"refusing to replace {tmp_path / name}: libreyolo-sweep did not write it"
    )
    assert (tmp_path / name).read_bytes() == content
    assert name == "sweep.json" or not (tmp_path / "sweep.json").exists()


def test_write_report_replaces_its_own_record_and_chart(tmp_path: Path) -> None:
    write_report(make_sweep(tmp_path))
    assert is_our_chart(tmp_path / "sweep.png")
    (tmp_path / "sweep.png").write_bytes(b"\x89PNG\r\n\x1a\n an older chart of ours")
    write_report(tmp_path)  # the record we wrote says the chart is ours
    assert is_our_chart(tmp_path / "sweep.png")
    assert not list(tmp_path.glob(".sweep.*"))  # no temp file left by the atomic writes


def test_a_sweep_json_linked_elsewhere_is_not_followed(tmp_path: Path) -> None:
    (tmp_path / "elsewhere.txt").write_text("keep me", encoding="utf-8")
    root = make_sweep(tmp_path / "sweep")
    (root / "sweep.json").symlink_to(tmp_path / "elsewhere.txt")
    with pytest.raises(UsageError):
        write_report(root)
    assert (tmp_path / "elsewhere.txt").read_text(encoding="utf-8") == "keep me"


def test_python_m_report_refuses_with_one_line_and_exit_2(tmp_path: Path) -> None:
    make_sweep(tmp_path)
    (tmp_path / "sweep.json").write_text("my notes", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "libreyolo.sweep.report", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 2
    assert done.stderr == (
        f"refusing to replace {tmp_path / 'sweep.json'}: libreyolo-sweep did not write it {HINT}\n"
    )


def test_the_sweep_refuses_before_measuring_into_a_folder_with_a_foreign_file(
    tmp_path: Path,
) -> None:
    point = tmp_path / "b1_s64_amp1"
    point.mkdir()
    (point / "point.json").write_text('{"mine": true}', encoding="utf-8")
    argv = tiny_sweep_argv(tmp_path, "batch=1,2", "imgsz=64")
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2
    assert done.stderr == (
        f"refusing to replace {point / 'point.json'}: libreyolo-sweep did not write it {HINT}\n"
    )
    assert (point / "point.json").read_text(encoding="utf-8") == '{"mine": true}'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b1_s64_amp1"]  # nothing measured


@pytest.mark.parametrize("name", ["point.json", "status.json", "point.log"])
def test_a_point_with_a_foreign_file_fails_and_writes_nothing(tmp_path: Path, name: str) -> None:
    folder = tmp_path / "p"
    folder.mkdir()
    (folder / name).write_text("someone's notes", encoding="utf-8")
    cfg = as_plain_dict(ProfileConfig())
    cfg["sweep"] |= {"lock_dir": str(tmp_path / "locks")}
    record = to_plain(run_point(cfg, folder, isolate=False))
    assert isinstance(record, dict)
    assert (record["status"], record["code"]) == ("failed", "usage")
    assert record["reason"].startswith(f"refusing to replace {folder / name}")
    assert [p.name for p in folder.iterdir()] == [name]
    assert (folder / name).read_text(encoding="utf-8") == "someone's notes"


def test_a_fifo_named_like_the_chart_is_foreign_and_never_opened(tmp_path: Path) -> None:
    import os
    import threading

    from libreyolo.sweep.owned import foreign_file

    os.mkfifo(tmp_path / "sweep.png")
    found: list[object] = []
    worker = threading.Thread(target=lambda: found.append(foreign_file(tmp_path)), daemon=True)
    worker.start()
    worker.join(timeout=10)  # a blocking open() of the FIFO would wait here for a writer
    assert found == [tmp_path / "sweep.png"]
