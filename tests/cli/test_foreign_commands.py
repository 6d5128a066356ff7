"""`libreyolo train ...` typed at this install (which provides `libreyolo profile` only): one
line, exit 2, naming libreyolo 1.x's own command where a `--trainer` run showed where it is;
a remembered entry only ever words that hint, and a hostile one is no entry."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from libreyolo.known_trainer import FILE_NAME, known_trainer, remember_trainer
from tests.cache_entries import plant
from tests.conftest import invoke

GENERIC = (
    "'train' is a command of libreyolo 1.x: this install provides 'libreyolo profile' only "
    "(run it from the environment where libreyolo 1.x is installed; profile its training "
    "with: libreyolo profile run DATA --trainer <that environment>)\n"
)


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    folder.mkdir()
    monkeypatch.setenv("LIBREYOLO_CACHE_DIR", str(folder))
    return folder


def _env(root: Path) -> Path:
    python = root / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text("#!/bin/sh\n")
    python.chmod(0o755)
    (root / "bin" / "libreyolo").write_text("#!/bin/sh\n")
    (root / "bin" / "libreyolo").chmod(0o755)
    return python


def test_train_with_key_value_words_is_one_line_exit_2(cache: Path) -> None:
    result = invoke(["train", "data=coco8.yaml", "epochs=3"])
    assert (result.status, result.stdout, result.stderr) == (2, "", GENERIC)


@pytest.mark.parametrize("command", ["predict", "val", "export", "models", "doctor"])
def test_every_1x_command_is_named(cache: Path, command: str) -> None:
    result = invoke([command, "x"])
    assert result.status == 2
    assert result.stderr.startswith(f"'{command}' is a command of libreyolo 1.x")


def test_the_task_word_and_json_are_no_way_around(cache: Path) -> None:
    assert invoke(["detect", "train", "data=x.yaml"]).stderr == GENERIC
    result = invoke(["train", "data=x.yaml", "--json"])
    assert result.status == 2 and json.loads(result.stderr)["error"]["code"] == "usage"


def test_a_remembered_trainer_gives_its_own_command_as_typed(cache: Path, tmp_path: Path) -> None:
    python = _env(tmp_path / "my env")
    remember_trainer(str(python))
    result = invoke(["train", "data=coco8.yaml", "name=a b;rm"])
    script = python.parent / "libreyolo"
    assert result.status == 2
    assert result.stderr.endswith(
        f"(run it with libreyolo 1.x's own: '{script}' train data=coco8.yaml 'name=a b;rm')\n"
    )


@pytest.mark.parametrize(
    "entry",
    [
        {"python": "relative/bin/python"},
        {"python": "/no/such/python"},
        {"python": "/bin/sh\n--evil"},
        {"python": 3},
        {"python": ["/bin/sh"]},
        {"other": "/bin/sh"},
        [],
        "just text",
    ],
)
def test_a_hostile_entry_is_no_entry(cache: Path, entry: object) -> None:
    if isinstance(entry, dict):  # sealed, as the cache writes: the entry's own check decides
        plant(FILE_NAME, entry)
    else:
        (cache / FILE_NAME).write_text(json.dumps(entry))
    assert known_trainer() is None
    assert invoke(["train", "data=x.yaml"]).stderr == GENERIC


def test_a_non_executable_or_oversized_entry_is_no_entry(cache: Path, tmp_path: Path) -> None:
    plain = tmp_path / "python"
    plain.write_text("x")
    plant(FILE_NAME, {"python": str(plain)})
    assert known_trainer() is None
    plant(FILE_NAME, {"python": "/" + "a" * (2 << 20)})
    assert known_trainer() is None
    (cache / FILE_NAME).unlink()
    (cache / FILE_NAME).mkdir()  # a folder where the file should be
    assert known_trainer() is None
    assert invoke(["train", "data=x.yaml"]).status == 2


def test_a_profile_command_is_not_refused(cache: Path) -> None:
    assert invoke(["profile", "--help"]).status == 0
    assert "invalid choice: 'nonsense'" in invoke(["nonsense"]).stderr
