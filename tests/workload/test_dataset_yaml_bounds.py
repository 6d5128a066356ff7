"""Dataset YAMLs are read with aliases and size bounded, and `names` is checked before use.

Bombs run in a child interpreter with 1 GiB of address space and a timeout, so a regression
fails the test instead of filling the machine's memory.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from libreyolo.bounded_yaml import load_yaml_bounded
from libreyolo.errors import DatasetError, UsageError
from libreyolo.workload.data.dataset_config import load_dataset_yaml

ROOT = Path(__file__).resolve().parents[2]
LAUGHS = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"{new}: &{new} [{', '.join([f'*{old}'] * 9)}]\n"
    for old, new in zip("abcdefgh", "bcdefghi", strict=True)
)
_CHILD = """
import json, resource, sys
from pathlib import Path
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
from libreyolo.workload.data.dataset_config import load_dataset_yaml
try:
    spec = load_dataset_yaml(Path(sys.argv[1]))
    print(json.dumps({"names": len(spec.names)}))
except Exception as err:
    print(json.dumps({"error": type(err).__name__, "status": int(err.status), "message": str(err)}))
"""


def _load_in_child(path: Path) -> dict[str, object]:
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, str(path)],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        timeout=30,
    )
    return json.loads(proc.stdout)


def _dataset(tmp_path: Path, text: str) -> Path:
    (tmp_path / "images").mkdir(exist_ok=True)
    (tmp_path / "images" / "a.jpg").write_bytes(b"")  # listed, never decoded here
    path = tmp_path / "d.yaml"
    path.write_text("train: images\n" + text, encoding="utf-8")
    return path


@pytest.mark.parametrize("where", ["names", "train"])
def test_billion_laughs_is_refused_at_once(where: str, tmp_path: Path) -> None:
    text = LAUGHS + ("names: *i\n" if where == "names" else "names: [a]\nval: *i\n")
    path = _dataset(tmp_path, text)
    assert _load_in_child(path) == {
        "error": "DatasetError",
        "status": 2,
        "message": f"{path}: its aliases expand to more than 200000 YAML nodes "
        "(nested aliases, a 'billion laughs' file?)",
    }


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("nc: 100000000\n", "more than 10000 classes"),
        (f"names: [{', '.join(['x'] * 10001)}]\n", "more than 10000 classes"),
        ("names: [cat, [dog, 2]]\n", "'names' entry 1 must be a name, got ['dog', 2]"),
        ("names: [cat, null]\n", "'names' entry 1 must be a name, got None"),
        ("names: {0: cat, 1: {x: 1}}\n", "'names' entry 1 must be a name, got {'x': 1}"),
        (f"names: [cat, {{k: {'d' * 60}}}]\n", "'names' entry 1 must be a name, got a dict"),
        (f"names: {'x' * 60}\n", "'names' must be a list or a dict, got a str"),
    ],
)
def test_bad_names_are_refused_in_one_line(text: str, message: str, tmp_path: Path) -> None:
    path = _dataset(tmp_path, text)
    assert _load_in_child(path) == {
        "error": "DatasetError",
        "status": 2,
        "message": f"{path}: {message}",
    }


def test_names_written_as_numbers_are_names(tmp_path: Path) -> None:
    spec = load_dataset_yaml(_dataset(tmp_path, "names: [0, 1.5, cat]\n"))
    assert spec.names == ("0", "1.5", "cat")


def test_a_few_aliases_are_fine(tmp_path: Path) -> None:
    spec = load_dataset_yaml(_dataset(tmp_path, "names: &n [cat, dog]\nval: images\nx: *n\n"))
    assert spec.names == ("cat", "dog")


def test_an_alias_inside_itself_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "loop.yaml"
    path.write_text("a: &a [1, *a]\n", encoding="utf-8")
    with pytest.raises(UsageError) as caught:
        load_yaml_bounded(path)
    assert caught.value.message == f"{path}: an alias refers to a node that contains it"


def test_broken_yaml_is_one_line(tmp_path: Path) -> None:
    path = _dataset(tmp_path, "names: [cat, dog\n")
    with pytest.raises(DatasetError) as caught:
        load_dataset_yaml(path)
    assert caught.value.message.startswith(f"{path}: not valid YAML: ")
    assert "\n" not in caught.value.message


def test_yaml_over_8_mib_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    with path.open("wb") as out:
        out.truncate((8 << 20) + 1)
    with pytest.raises(DatasetError) as caught:
        load_dataset_yaml(path)
    assert caught.value.message == f"{path}: larger than 8 MiB, too large for a YAML file"


def test_yaml_that_is_no_regular_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as caught:
        load_yaml_bounded("/dev/zero")
    assert caught.value.message == "/dev/zero: not a regular file"


@pytest.mark.parametrize("text", ["names: !!python/object:os.system x\n", "? [1, 2]\n: a\n"])
def test_yaml_that_composes_but_cannot_be_built_is_one_line(text: str, tmp_path: Path) -> None:
    path = _dataset(tmp_path, text)
    with pytest.raises(DatasetError) as caught:
        load_dataset_yaml(path)
    assert caught.value.message.startswith(f"{path}: not valid YAML: ")
    assert "\n" not in caught.value.message
